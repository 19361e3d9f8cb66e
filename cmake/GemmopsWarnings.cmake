# cmake/GemmopsWarnings.cmake: gemmops_set_warnings(target) and the sanitizer flags
function(gemmops_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(GEMMOPS_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(GEMMOPS_SANITIZE)
  string(REPLACE ";" "," _gemmops_sanitizers "${GEMMOPS_SANITIZE}")
  add_compile_options(-fsanitize=${_gemmops_sanitizers} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_gemmops_sanitizers})
endif()
