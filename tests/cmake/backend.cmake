# The backend interface's shape (docs/backend.md): no function or op in
# core/backend/backend.h takes more than 8 parameters; wider ops take a
# descriptor (tests/backend_params.sh).
add_test(NAME backend_params
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/backend_params.sh
                 ${PROJECT_SOURCE_DIR}/core/backend/backend.h 8)
set_tests_properties(backend_params PROPERTIES LABELS "numerics" TIMEOUT 30)
