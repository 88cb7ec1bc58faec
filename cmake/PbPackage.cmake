# SPDX-License-Identifier: MIT
# `cmake --install` and `cpack -G DEB`: the binary, its man page and its bash, zsh and fish
# completions, in the places Debian's man-db and shells look (README.md, "Install").
include(GNUInstallDirs)
install(TARGETS primebeaker RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES "${pb_share}/man/man1/primebeaker.1.gz" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
install(FILES "${pb_share}/bash-completion/completions/primebeaker"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions")
install(FILES "${pb_share}/zsh/vendor-completions/_primebeaker"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions")
install(FILES "${pb_share}/fish/vendor_completions.d/primebeaker.fish"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d")

set(CPACK_PACKAGE_NAME primebeaker)
set(CPACK_PACKAGE_VENDOR "primebeaker")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Run Prime-RL SFT and RL training on the Beaker scheduler")
set(CPACK_PACKAGE_CONTACT "primebeaker maintainers <primebeaker@users.noreply.github.com>")
set(CPACK_PACKAGE_INSTALL_DIRECTORY primebeaker)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: computed from the binary's shared libraries by dpkg-shlibdeps (dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# SQLite is dlopen()ed (src/registry/sqlite.cpp), so dpkg-shlibdeps cannot see it; the registry's
# sqlite:// store and the watcher need it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libsqlite3-0 (>= 3.40)")
if(PB_LEAN_LINK AND PB_HAVE_PACK_RELATIVE_RELOCS)
  # DT_RELR needs the loader of glibc 2.36 (dpkg-shlibdeps only sees the symbol versions).
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libc6 (>= 2.36)")
endif()
# dlopened: libcurl for the registry's HTTP, libcpp-httplib by `watcher serve` (its plugin).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libcurl4 (>= 7.88), libcpp-httplib0.11")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion")
set(CPACK_GENERATOR DEB)
include(CPack)
