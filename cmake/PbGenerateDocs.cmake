# SPDX-License-Identifier: MIT
# cmake -DBINARY=path/to/primebeaker -DSHARE=dir -P PbGenerateDocs.cmake
# Writes the man page (gzipped, reproducibly: no name or time stamp) and the bash, zsh and fish
# completion scripts that `primebeaker` generates from its command tree.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
function(pb_capture out)
  execute_process(COMMAND "${BINARY}" ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "primebeaker ${ARGN} failed (${rc})")
  endif()
  get_filename_component(dir "${out}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  file(WRITE "${out}" "${text}")
endfunction()
pb_capture("${SHARE}/bash-completion/completions/primebeaker" completion bash)
pb_capture("${SHARE}/zsh/vendor-completions/_primebeaker" completion zsh)
pb_capture("${SHARE}/fish/vendor_completions.d/primebeaker.fish" completion fish)
pb_capture("${SHARE}/man/man1/primebeaker.1" man-page)
find_program(GZIP gzip REQUIRED)
execute_process(COMMAND "${GZIP}" -9nf "${SHARE}/man/man1/primebeaker.1" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip of the man page failed (${rc})")
endif()
