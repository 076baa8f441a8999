# The INT8 test family (tests/testfamily/int8.c), written only against
# core/formats/family.h: its quantizer and its GEMM against finite
# differences through the family table, and the tiny GPT trained through
# the CLI with it (amptrain_testmodels registers it; the policy int8test,
# built into its own folder, selects it; the plain amptrain refuses it).
amp_unit_test(test_testfamily_int8 fp8 testfamily)
target_sources(test_testfamily_int8 PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/testfamily/int8.c)
set(AMP_TESTFAMILY_DIR ${CMAKE_BINARY_DIR}/tests/testfamily_plugins)
amp_bad_plugin_in(${AMP_TESTFAMILY_DIR} amp_test_precision_int8test precision int8test
                  ../testfamily/policy.c)
add_test(NAME testfamily_int8_train
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/testfamily/train.sh
                 $<TARGET_FILE:amptrain_testmodels> $<TARGET_FILE:amptrain> ${AMP_TESTFAMILY_DIR}
                 ${CMAKE_BINARY_DIR}/tests/testfamily_train)
set_tests_properties(testfamily_int8_train PROPERTIES LABELS "train;cli;fp8;testfamily" TIMEOUT 300)
