"""Every image the README shows exists in the repository, and stays small enough to keep the checkout light."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_image_the_readme_references_exists_and_is_small() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    assert len(images) >= 7, images  # the console section's screenshots
    for image in images:
        path = ROOT / image
        assert path.is_file(), f"README.md shows {image}, which is not in the repository"
        assert path.stat().st_size < 200_000, f"{image}: {path.stat().st_size} bytes; retake it (make screenshots)"
