from __future__ import annotations

import pytest


def test_write_between_markers_replaces_only_the_marked_block_and_refuses_a_file_without_markers(tmp_path) -> None:
    from environments.stats import write_between_markers

    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- t:start -->\nold\n<!-- t:end -->\nrest\n", encoding="utf-8")
    write_between_markers(readme, "<!-- t:start -->", "<!-- t:end -->", "| new |")
    assert readme.read_text(encoding="utf-8") == "intro\n<!-- t:start -->\n| new |\n<!-- t:end -->\nrest\n"
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="has no <!-- t:start -->"):
        write_between_markers(readme, "<!-- t:start -->", "<!-- t:end -->", "x")
