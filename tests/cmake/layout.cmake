# core/'s rooms (core/README.md): every file in a listed room, every include
# from a room to itself or to one listed above it (tests/layout/rooms.py).
add_test(NAME layout_rooms COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/layout/rooms.py ${PROJECT_SOURCE_DIR})
set_tests_properties(layout_rooms PROPERTIES LABELS "layout")
