"""The text front-end stays the reference's: normalisation only runs when called."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import astuple

from pocketcli.normalize import normalize_text
from pocketcli.text import load_tokenizer, plan_chunks
from tests.support.paths import DATA

TOKENIZER = DATA / "tokenizer-en" / "tokenizer.model"
SAMPLE = (
    "Dr. Smith paid $1,234.56 on 2024-03-15 at 14:30. It was 3.5 km away, i.e. far! "
    "Call 555-123-4567 [pause] or mail jane@example.org ❤️."
)

# Plans computed in a fresh interpreter that never imports pocketcli.normalize.
_FRESH = f"""
import json, sys
from dataclasses import astuple
from pocketcli.text import load_tokenizer, plan_chunks
plans = [astuple(p) for p in plan_chunks(load_tokenizer({str(TOKENIZER)!r}), {SAMPLE!r})]
assert "pocketcli.normalize" not in sys.modules
print(json.dumps(plans))
"""


def test_plan_chunks_is_unchanged_with_normalisation_off() -> None:
    normalize_text(SAMPLE, "english")  # importing and running it must not change the front-end
    ours = [list(astuple(p)) for p in plan_chunks(load_tokenizer(TOKENIZER), SAMPLE)]
    fresh = subprocess.run(
        [sys.executable, "-c", _FRESH], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(fresh.stdout) == json.loads(json.dumps(ours))
    # The raw text reaches the tokenizer: digits and markers are still there.
    joined = " ".join(p[0] for p in ours)
    assert "1,234.56" in joined and "2024-03-15" in joined and "[pause]" in joined


def test_normalised_text_still_plans() -> None:
    plans = plan_chunks(load_tokenizer(TOKENIZER), normalize_text(SAMPLE, "english"))
    assert plans and not any(c.isdigit() for p in plans for c in p.text)
