"""bundle.json and the pockettts.json sidecar of a KevinAHM bundle, missing or damaged,
are one line naming the file and the cause (as pack.json is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketcli.packs.kevinahm.export import SIDECAR_FILE
from pocketcli.runtimes.kevinahm import Bundle, BundleError
from tests.support.bundlehelp import copy_of_bundle


def test_a_folder_without_bundle_json_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"is not a KevinAHM bundle \(no bundle.json\)"):
        Bundle.read(tmp_path)


@pytest.mark.parametrize(
    "name, content, cause",
    [
        ("bundle.json", "{not json", "Expecting property name"),
        ("bundle.json", "[" * 100_000, "nested too deeply"),
        (SIDECAR_FILE, b"\xff\xfe{", "codec can't decode"),
        (SIDECAR_FILE, "[" * 100_000, "nested too deeply"),
    ],
)
def test_a_damaged_bundle_file_is_one_line_naming_it(
    tmp_path: Path, name: str, content: str | bytes, cause: str
) -> None:
    bundle = copy_of_bundle(tmp_path)
    path = bundle / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(BundleError) as info:
        Bundle.read(bundle)
    message = str(info.value)
    assert message.startswith(f"cannot read {path}: ") and cause in message, message
    assert "\n" not in message
