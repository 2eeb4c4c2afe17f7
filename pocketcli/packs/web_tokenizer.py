"""A SentencePiece model as the browser pack's ``tokenizer.json`` (the same pieces and ids).

The published browser pack ships ``tokenizer.json`` (Hugging Face ``tokenizers``), and
pages written for it read that file. A checkpoint's tokenizer is a SentencePiece
``tokenizer.model``; this converts it with the ``tokenizers`` library's own building
blocks, read from the model's protobuf with ``sentencepiece``'s own schema
(``sentencepiece_model_pb2``), following what transformers' ``SpmConverter`` does for a
Unigram model, but honouring every normaliser setting the model has:

- the pieces in id order with their scores (a Unigram model, byte fallback as the model's);
- the normaliser: the model's precompiled character map (none for Kyutai's English),
  whitespace collapsed and trimmed only when ``remove_extra_whitespaces`` is set (Kyutai's
  is not: ``tokenizers``' own ``from_spm`` always collapses, which gives other ids for a
  double space), the dummy prefix ``▁`` always prepended when ``add_dummy_prefix`` is set
  (a Metaspace pre-tokenizer skips it when the text starts with a space: other ids), and
  spaces as ``▁``;
- no pre-tokenizer: SentencePiece segments the whole normalised text at once;
- control and byte pieces (``<s>``, ``<0x41>``...) are plain pieces with their scores, not
  added tokens, as in transformers' conversion. One difference stays, in every
  ``tokenizer.json`` of a SentencePiece model: a text that spells a control or byte
  piece's name (``<s>``, ``<0x41>``) is read as that piece, where SentencePiece spells it
  out (a ``tokenizers`` Unigram model cannot bar a piece from matching: a piece scored
  below all others still beats the unknown-character path, whose penalty is set from
  the lowest score);
- no post-processor: ``encode(text).ids`` is ``SentencePieceProcessor.encode(text)``.

``tests/unit/packs/test_web_tokenizer.py`` checks the ids on the MiniMax English texts.
"""

from __future__ import annotations

from pathlib import Path

from pocketcli.errors import UserError

_UNIGRAM = 1  # TrainerSpec.ModelType


def _proto(path: Path):
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError: a file that is no model
        raise UserError(f"{path}: not a SentencePiece model ({exc})") from None
    if model.trainer_spec.model_type != _UNIGRAM or not model.pieces:
        raise UserError(f"{path}: only a Unigram SentencePiece model converts to tokenizer.json")
    return model


def sentencepiece_to_json(path: str | Path) -> str:
    """The ``tokenizer.json`` text of the SentencePiece model at ``path``."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers
    from tokenizers.models import Unigram

    model = _proto(Path(path))
    spec = model.normalizer_spec
    vocab = [(p.piece, p.score) for p in model.pieces]
    tokenizer = Tokenizer(
        Unigram(vocab, model.trainer_spec.unk_id, model.trainer_spec.byte_fallback)
    )
    steps = []
    if spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(spec.precompiled_charsmap))
    if spec.remove_extra_whitespaces:
        steps += [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.add_dummy_prefix:
        steps.append(normalizers.Prepend(" "))
    if spec.escape_whitespaces:
        steps.append(normalizers.Replace(" ", "▁"))
    tokenizer.normalizer = normalizers.Sequence(steps)
    undo = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if spec.add_dummy_prefix:
        undo.append(decoders.Strip(" ", 1, 0))
    tokenizer.decoder = decoders.Sequence(undo)
    return tokenizer.to_str(pretty=True)
