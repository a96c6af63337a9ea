# What `cmake --install` puts under the prefix, for programs that gate themselves with leakgate:
#
#   include/leakgate.h                          the C API
#   lib/libleakgate.so*                         what a program links (no-ops outside exec)
#   lib/leakgate/libleakgate-agent.so           the agent `leakgate exec` preloads
#   bin/leakgate                                the harness, exec included
#   lib/pkgconfig/leakgate.pc                   pkg-config --cflags --libs leakgate
#   lib/cmake/leakgate/leakgateConfig*.cmake    find_package(leakgate) -> leakgate::leakgate
#
# Both the pkg-config file and the CMake package find the prefix from where they are installed
# (the prefix given to `cmake --install --prefix` need not be the configured one).
include(CMakePackageConfigHelpers)

install(TARGETS leakgate_api EXPORT leakgateTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/leakgate.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET leakgate_agent)
  install(TARGETS leakgate_agent LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/leakgate)
endif()
install(TARGETS leakgate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT leakgateTargets NAMESPACE leakgate:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/leakgate)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/leakgateConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/leakgateConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/leakgate
                              PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/leakgateConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/leakgateConfig.cmake ${PROJECT_BINARY_DIR}/leakgateConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/leakgate)

file(RELATIVE_PATH LG_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" LG_PC_TO_PREFIX "${LG_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/leakgate.pc.in ${PROJECT_BINARY_DIR}/leakgate.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/leakgate.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
