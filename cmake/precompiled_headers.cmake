# Precompiled headers. nlohmann/json, fmt (under spdlog), CLI11 and GoogleTest cost 2-10 s to
# parse in every translation unit that includes them, which was about half of a cold build; CI
# builds three variants from scratch. Each target parses its heavy headers once instead.
#
# lagpilot_precompile(<target> [<header>...]): the standard headers and nlohmann/json that every
# target uses, plus the given extra headers (e.g. <gtest/gtest.h>).
function(lagpilot_precompile target)
  target_precompile_headers(${target} PRIVATE
    <algorithm> <chrono> <cstdint> <functional> <map> <memory> <optional> <string>
    <string_view> <utility> <vector> <nlohmann/json.hpp> ${ARGN})
endfunction()
