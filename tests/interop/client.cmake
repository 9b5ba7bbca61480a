# Interop: the reelfs S3 client against s3rver (npm), included from tests/interop/CMakeLists.txt.
reelfs_add_test(client_s3rver_test LABEL interop
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/client_s3rver_test.cc
          ${PROJECT_SOURCE_DIR}/tests/fakes/gateway_process.cc
  LIBS reelfs_s3_client
  NO_DOCTEST_MAIN
  TIMEOUT 300
  ENV REELFS_S3RVER_BIN=${CMAKE_CURRENT_SOURCE_DIR}/node_modules/.bin/s3rver)

# `reelfs cp` uploads against reelfs-gateway, checked through the AWS CLI (cp_upload_awscli.sh).
if(TARGET reelfs-gateway AND TARGET reelfs)
  reelfs_add_script_test(cp_upload_awscli LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/cp_upload_awscli.sh
    ENV REELFS_GATEWAY_BIN=$<TARGET_FILE:reelfs-gateway> REELFS_BIN=$<TARGET_FILE:reelfs>
    TIMEOUT 600)
endif()
