"""The one reader of input files, for evalframe's loaders and for third-party ones.

Every dataset, corpus and run loader, and ``evalframe trec-eval``, reads its
files through these functions, so the same mistake in a file gets the same
one-paragraph error (exit code 2, ``file:line``, expected, found, hint)
whatever the format:

- paths: :func:`require_file`, :func:`require_folder`; a missing file, a
  folder given as a file and an unreadable file are errors naming the path
  and the config key;
- text: :func:`read_lines` (streamed, numbered), :func:`read_text` (a whole
  document), :func:`read_bytes`; UTF-8 with an optional byte-order mark,
  ``\\n`` or ``\\r\\n``; a NUL byte, a UTF-16 file or bad UTF-8 is located to
  ``file:line:column`` and its byte offset;
- columns: :func:`read_fields` and :func:`split_fields` (fields separated by
  ASCII whitespace only; see :mod:`.files` for the policy), :func:`parse_int`;
- JSON: :func:`read_jsonl`, :func:`read_json` (a :class:`JsonDocument` that
  knows the line of every element and member), :func:`read_json_array`;
- TREC: :func:`read_qrels_columns`, :func:`read_run_columns` (columnar and
  fast) and :func:`read_trec_run` (a :class:`~evalframe.core.types.Run`).

Warnings go through :mod:`evalframe.core.messages` (``warn``, ``Tally``).
See docs/plugins.md, "Reading files".
"""

from evalframe.core.reader.files import (
    ASCII_SPACE,
    check_text,
    decode,
    dvc_placeholder,
    parse_int,
    read_bytes,
    read_fields,
    read_lines,
    read_text,
    require_file,
    require_folder,
    split_fields,
    warn_unicode_space,
    yaml_error,
)
from evalframe.core.reader.jsonfiles import JsonDocument, read_json, read_json_array, read_jsonl
from evalframe.core.reader.trec import (
    QrelsColumns,
    RunColumns,
    decode_ids,
    parse_qrels,
    parse_run,
    read_qrels_columns,
    read_run_columns,
    read_trec_run,
)

__all__ = [
    "ASCII_SPACE",
    "JsonDocument",
    "QrelsColumns",
    "RunColumns",
    "check_text",
    "decode",
    "decode_ids",
    "dvc_placeholder",
    "parse_int",
    "parse_qrels",
    "parse_run",
    "read_bytes",
    "read_fields",
    "read_json",
    "read_json_array",
    "read_jsonl",
    "read_lines",
    "read_qrels_columns",
    "read_run_columns",
    "read_text",
    "read_trec_run",
    "require_file",
    "require_folder",
    "split_fields",
    "warn_unicode_space",
    "yaml_error",
]
