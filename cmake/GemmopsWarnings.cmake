# cmake/GemmopsWarnings.cmake: gemmops_set_warnings(target) and the sanitizer flags
function(gemmops_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports impossible overlaps in inlined std::string concatenation (GCC bug 105329).
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(GEMMOPS_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(GEMMOPS_SANITIZE)
  string(REPLACE ";" "," _gemmops_sanitizers "${GEMMOPS_SANITIZE}")
  add_compile_options(-fsanitize=${_gemmops_sanitizers} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_gemmops_sanitizers})
endif()
