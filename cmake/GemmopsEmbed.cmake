# cmake/GemmopsEmbed.cmake: gemmops_embed_kernels(out.cpp) turns kernels/** into a C++ table of
# {path, text} plus one hash of all of them, so compile() needs no files on disk.
set(_gemmops_embed_script ${CMAKE_CURRENT_LIST_DIR}/embed_kernels.cmake)
function(gemmops_embed_kernels out_cpp)
  file(GLOB_RECURSE _kernels CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/*.cuh)
  add_custom_command(OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR}/kernels -DOUT=${out_cpp} -P ${_gemmops_embed_script}
    DEPENDS ${_kernels} ${_gemmops_embed_script}
    COMMENT "Embedding kernel sources" VERBATIM)
endfunction()
