# Interop tests of reelfs-gateway with third-party clients (AWS CLI, boto3, curl). Included from
# tests/interop/CMakeLists.txt. Each script starts its own gateway on 127.0.0.1:0 with a temp
# root and exits 77 (skip) when its client is missing.
if(TARGET reelfs-gateway)
  set(_gw_env "REELFS_GATEWAY_BIN=$<TARGET_FILE:reelfs-gateway>")
  reelfs_add_script_test(gateway_awscli LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_awscli.sh
    ENV ${_gw_env} TIMEOUT 600)
  reelfs_add_script_test(gateway_boto3 LABEL interop
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/gateway_boto3.py
    ENV ${_gw_env} TIMEOUT 600)
  reelfs_add_script_test(gateway_archive_boto3 LABEL interop
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/gateway_archive_boto3.py
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_faults_curl LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_faults_curl.sh
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_timeline LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_timeline.sh
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_security_boto3 LABEL interop
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/gateway_security_boto3.py
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_frontends LABEL interop
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/gateway_frontends.py
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_body_framing LABEL interop
    COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/gateway_body_framing.py
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_archive_policy LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_archive_policy.sh
    ENV ${_gw_env} TIMEOUT 300)
  reelfs_add_script_test(gateway_metrics LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_metrics.sh
    ENV ${_gw_env} TIMEOUT 300)
  if(TARGET reelfs)
    reelfs_add_script_test(gateway_tls LABEL interop
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_tls.sh
      ENV ${_gw_env} "REELFS_BIN=$<TARGET_FILE:reelfs>" TIMEOUT 300)
    reelfs_add_script_test(credential_chain LABEL interop
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/credential_chain.sh
      ENV ${_gw_env} "REELFS_BIN=$<TARGET_FILE:reelfs>" TIMEOUT 300)
  endif()
  reelfs_add_script_test(gateway_curl LABEL interop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/gateway_curl.sh
    ENV ${_gw_env} TIMEOUT 300)
endif()
