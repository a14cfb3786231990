# pocketfft (BSD-3-Clause, header only): the CPU FFTs, the library MLX's CPU
# backend uses too, so rfft/irfft/fftn give MLX's numbers (signed zeros
# included). It is not packaged for Debian and has no PyPI wheel of its own;
# numpy's source distribution carries the C++ header (numpy/fft/pocketfft/).
#
# Sets POCKETFFT_INCLUDE_DIR (holds pocketfft_hdronly.h) and
# POCKETFFT_LICENSE_FILE. Where the header comes from, first match wins:
#   1. -DALLOY_POCKETFFT_DIR=<dir> or the environment's ALLOY_POCKETFFT_DIR
#      (offline builds: a folder with pocketfft_hdronly.h);
#   2. numpy's sdist, pinned by version and SHA-256, downloaded once into
#      ALLOY_DOWNLOAD_DIR (default build/downloads under the source tree, so
#      the wheel and the AOT builds reuse one copy) and unpacked here.

set(ALLOY_POCKETFFT_DIR "$ENV{ALLOY_POCKETFFT_DIR}" CACHE PATH "A folder holding pocketfft_hdronly.h (empty: download numpy's sdist)")
set(ALLOY_DOWNLOAD_DIR "${CMAKE_SOURCE_DIR}/build/downloads" CACHE PATH "Where build-time downloads are kept")

set(_pocketfft_numpy_version 2.4.6)
set(_pocketfft_sdist_sha256 f3a3570c4a2a16746ac2c31a7c7c7b0c186b95ce902e33db6f28094ed7387dda)
set(_pocketfft_sdist_url
    "https://files.pythonhosted.org/packages/d0/ad/fed0499ce6a338d2a03ebae59cd15093910c8875328855781952abf6c2fe/numpy-${_pocketfft_numpy_version}.tar.gz")

if(ALLOY_POCKETFFT_DIR)
  if(NOT EXISTS "${ALLOY_POCKETFFT_DIR}/pocketfft_hdronly.h")
    message(FATAL_ERROR "ALLOY_POCKETFFT_DIR=${ALLOY_POCKETFFT_DIR} has no pocketfft_hdronly.h")
  endif()
  set(POCKETFFT_INCLUDE_DIR "${ALLOY_POCKETFFT_DIR}")
else()
  set(_sdist "${ALLOY_DOWNLOAD_DIR}/numpy-${_pocketfft_numpy_version}.tar.gz")
  set(_unpacked "${CMAKE_BINARY_DIR}/_deps/numpy-${_pocketfft_numpy_version}")
  set(POCKETFFT_INCLUDE_DIR "${_unpacked}/numpy-${_pocketfft_numpy_version}/numpy/fft/pocketfft")
  if(NOT EXISTS "${POCKETFFT_INCLUDE_DIR}/pocketfft_hdronly.h")
    set(_have_sdist FALSE)
    if(EXISTS "${_sdist}")
      file(SHA256 "${_sdist}" _got)
      if(_got STREQUAL _pocketfft_sdist_sha256)
        set(_have_sdist TRUE)
      endif()
    endif()
    if(NOT _have_sdist)
      message(STATUS "pocketfft: downloading numpy ${_pocketfft_numpy_version}'s sdist for its header")
      file(MAKE_DIRECTORY "${ALLOY_DOWNLOAD_DIR}")
      file(DOWNLOAD "${_pocketfft_sdist_url}" "${_sdist}.part" STATUS _status
           EXPECTED_HASH SHA256=${_pocketfft_sdist_sha256} TLS_VERIFY ON)
      list(GET _status 0 _code)
      if(NOT _code EQUAL 0)
        file(REMOVE "${_sdist}.part")
        list(GET _status 1 _why)
        message(FATAL_ERROR "pocketfft: could not download ${_pocketfft_sdist_url} (${_why}). "
                            "Offline, point ALLOY_POCKETFFT_DIR at a folder holding pocketfft_hdronly.h "
                            "(numpy's sdist has it under numpy/fft/pocketfft/).")
      endif()
      file(RENAME "${_sdist}.part" "${_sdist}")
    endif()
    file(ARCHIVE_EXTRACT INPUT "${_sdist}" DESTINATION "${_unpacked}"
         PATTERNS "numpy-${_pocketfft_numpy_version}/numpy/fft/pocketfft/pocketfft_hdronly.h"
                  "numpy-${_pocketfft_numpy_version}/numpy/fft/pocketfft/LICENSE.md")
  endif()
endif()

# The licence travels with the binaries that compile the header in.
if(EXISTS "${POCKETFFT_INCLUDE_DIR}/LICENSE.md")
  set(POCKETFFT_LICENSE_FILE "${POCKETFFT_INCLUDE_DIR}/LICENSE.md")
else()
  set(POCKETFFT_LICENSE_FILE "")
endif()
message(STATUS "pocketfft: ${POCKETFFT_INCLUDE_DIR}")
