"""Regenerates the Kyutai part of pocketcli/data/catalog.json from the config YAMLs.

The catalog is data, not code: sources, pinned revisions and layer counts of
every model pockettts can fetch. The Kyutai entries restate what the YAML
files in pocketcli/data/configs/ say (copied from pocket-tts 4.0.1), so this
script derives them instead of anyone typing 40-hex revisions by hand. The
voice, CoreML and FluidAudio parts of the catalog are edited by hand.

    python scripts/update_catalog.py                 # rewrite the kyutai section
    python scripts/update_catalog.py --copy-configs  # first copy the YAMLs from an
                                                     # installed pocket-tts
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "pocketcli" / "data"
CONFIGS = DATA / "configs"
CATALOG = DATA / "catalog.json"


def kyutai_entry(path: Path) -> dict:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    flow_lm = raw["flow_lm"]
    return {
        "config": f"configs/{path.name}",
        "layers": int(flow_lm["transformer"]["num_layers"]),
        "weights": raw["weights_path"],
        "weights_without_voice_cloning": raw.get("weights_path_without_voice_cloning"),
        "tokenizer": flow_lm["lookup_table"]["tokenizer_path"],
    }


def copy_configs() -> None:
    import pocket_tts  # only for maintainers refreshing the copies

    source = Path(pocket_tts.__file__).parent / "config"
    for item in sorted(source.glob("*.yaml")):
        shutil.copyfile(item, CONFIGS / item.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--copy-configs",
        action="store_true",
        help="copy the YAMLs of the installed pocket-tts first",
    )
    args = parser.parse_args()
    if args.copy_configs:
        copy_configs()
    catalog = json.loads(CATALOG.read_text(encoding="utf-8"))
    catalog["kyutai"]["languages"] = {
        path.stem: kyutai_entry(path) for path in sorted(CONFIGS.glob("*.yaml"))
    }
    CATALOG.write_text(json.dumps(catalog, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
