"""Trigram segments: immutable inverted indexes over a set of blobs, stored as Arrow IPC files.

A segment covers the blobs it was built from, in blob-id order; a blob's ordinal is its
row in `blobs.arrow`. `postings.arrow` maps each trigram (sorted, one row each) to the
sorted ordinals of the text blobs containing it. Segments are content-addressed (their
id hashes their blob ids), so a commit that shares blobs with an indexed one reuses
them and only its new blobs cost anything. Workers memory-map them read-only.

    <root>/segments/<id>/blobs.arrow     blob: binary(20), size: uint64, binary: bool
    <root>/segments/<id>/postings.arrow  trigram: uint32, blobs: list<uint32>
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.codesearch.trigrams import trigrams_of
from worker.excerpts import is_binary
from worker.search.memory import flush_and_uncache

FORMAT_VERSION: Final = 1
FORMAT_KEY: Final = b"repo_reader.format"
BLOBS_FORMAT: Final = f"trigram-blobs/{FORMAT_VERSION}".encode()
POSTINGS_FORMAT: Final = f"trigram-postings/{FORMAT_VERSION}".encode()

BLOBS_SCHEMA: Final = pa.schema(
    [("blob", pa.binary(20)), ("size", pa.uint64()), ("binary", pa.bool_())],
    metadata={FORMAT_KEY: BLOBS_FORMAT},
)
POSTINGS_SCHEMA: Final = pa.schema(
    [("trigram", pa.uint32()), ("blobs", pa.list_(pa.uint32()))],
    metadata={FORMAT_KEY: POSTINGS_FORMAT},
)

Ordinals = npt.NDArray[np.uint32]
_NO_ORDINALS: Final[Ordinals] = np.empty(0, dtype=np.uint32)


class SegmentFormatError(Exception):
    """A segment on disk is missing, damaged or of another format version."""


@dataclass(frozen=True, slots=True)
class BlobText:
    """A blob to index: its raw 20-byte id and its content."""

    blob: bytes
    data: bytes


@dataclass(frozen=True, slots=True)
class Segment:
    """An inverted trigram index over a few blobs, in memory or memory-mapped."""

    id: str
    blob_ids: npt.NDArray[np.uint8]
    """Shape (n, 20): the raw id of each ordinal."""
    sizes: npt.NDArray[np.uint64]
    binary: npt.NDArray[np.bool_]
    trigrams: npt.NDArray[np.uint32]
    offsets: npt.NDArray[np.int32]
    postings: Ordinals
    keepalive: object = None
    """The Arrow tables whose memory the arrays view, kept alive with them."""

    def __len__(self) -> int:
        return int(self.blob_ids.shape[0])

    def ordinals(self, trigram: int) -> Ordinals:
        """Sorted ordinals of the text blobs that contain `trigram`."""
        at = int(np.searchsorted(self.trigrams, trigram))
        if at >= len(self.trigrams) or int(self.trigrams[at]) != trigram:
            return _NO_ORDINALS
        return self.postings[int(self.offsets[at]) : int(self.offsets[at + 1])]


def build_segment(blobs: Sequence[BlobText]) -> Segment:
    """The segment of `blobs` (ordered by blob id); binary blobs are listed but not indexed."""
    ordered = sorted(blobs, key=lambda b: b.blob)
    keys: list[npt.NDArray[np.uint64]] = []
    binary = np.zeros(len(ordered), dtype=np.bool_)
    for ordinal, item in enumerate(ordered):
        if is_binary(item.data):
            binary[ordinal] = True
            continue
        codes = trigrams_of(item.data).astype(np.uint64)
        keys.append((codes << np.uint64(32)) | np.uint64(ordinal))
    packed = np.concatenate(keys) if keys else np.empty(0, dtype=np.uint64)
    packed.sort()
    codes32 = (packed >> np.uint64(32)).astype(np.uint32)
    postings = (packed & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    trigrams, starts = np.unique(codes32, return_index=True)
    offsets = np.append(starts, len(codes32)).astype(np.int32)
    blob_ids = np.frombuffer(b"".join(b.blob for b in ordered), dtype=np.uint8).reshape(-1, 20)
    return Segment(
        id=segment_id(b.blob for b in ordered),
        blob_ids=blob_ids,
        sizes=np.fromiter((len(b.data) for b in ordered), dtype=np.uint64, count=len(ordered)),
        binary=binary,
        trigrams=trigrams.astype(np.uint32),
        offsets=offsets,
        postings=postings,
    )


def segment_id(blob_ids: Iterable[bytes]) -> str:
    """The content address of a segment: the sha1 of its sorted raw blob ids."""
    digest = hashlib.sha1(usedforsecurity=False)
    for blob in blob_ids:
        digest.update(blob)
    return digest.hexdigest()


def write_segment(directory: Path, segment: Segment) -> Path:
    """Store `segment` under `directory/<id>` atomically; an existing copy is kept as is."""
    target = directory / segment.id
    if target.is_dir():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory, prefix=f".{segment.id}.", suffix=".tmp"))
    try:
        blobs = pa.table(
            [
                pa.FixedSizeBinaryArray.from_buffers(
                    pa.binary(20), len(segment), [None, pa.py_buffer(segment.blob_ids.tobytes())]
                ),
                pa.array(segment.sizes, type=pa.uint64()),
                pa.array(segment.binary, type=pa.bool_()),
            ],
            schema=BLOBS_SCHEMA,
        )
        postings = pa.table(
            [
                pa.array(segment.trigrams, type=pa.uint32()),
                pa.ListArray.from_arrays(
                    pa.array(segment.offsets, type=pa.int32()),
                    pa.array(segment.postings, type=pa.uint32()),
                ),
            ],
            schema=POSTINGS_SCHEMA,
        )
        write_arrow(staging / "blobs.arrow", blobs)
        write_arrow(staging / "postings.arrow", postings)
        _fsync_dir(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another writer stored it first
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def open_segment(path: Path) -> Segment:
    """Memory-map the segment stored at `path` (read-only)."""
    blobs = read_arrow(path / "blobs.arrow", BLOBS_FORMAT)
    postings = read_arrow(path / "postings.arrow", POSTINGS_FORMAT)
    ids = blobs.column("blob").chunks
    lists = postings.column("blobs").chunks
    if len(ids) > 1 or len(lists) > 1:
        raise SegmentFormatError(f"{path}: expected a single record batch")
    count = blobs.num_rows
    blob_ids = (
        np.frombuffer(ids[0].buffers()[1], dtype=np.uint8)[: count * 20].reshape(count, 20)
        if count
        else np.empty((0, 20), dtype=np.uint8)
    )
    trigrams = postings.column("trigram").to_numpy()
    if lists:
        offsets = lists[0].offsets.to_numpy(zero_copy_only=True)
        values = lists[0].values.to_numpy(zero_copy_only=True)
    else:
        offsets, values = np.zeros(1, dtype=np.int32), _NO_ORDINALS
    return Segment(
        id=path.name,
        blob_ids=blob_ids,
        sizes=blobs.column("size").to_numpy(),
        binary=blobs.column("binary").to_numpy(),
        trigrams=trigrams,
        offsets=offsets,
        postings=values,
        keepalive=(blobs, postings),
    )


def write_arrow(path: Path, table: pa.Table) -> None:
    """Write `table` as one record batch of an Arrow IPC file, flushed to disk."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    flush_and_uncache(path)


def read_arrow(path: Path, expected_format: bytes) -> pa.Table:
    """Memory-map an Arrow IPC file and check its format marker."""
    try:
        source = pa.memory_map(str(path), "r")
        table = pa.ipc.open_file(source).read_all()
    except (FileNotFoundError, pa.ArrowInvalid) as exc:
        raise SegmentFormatError(f"{path}: {exc}") from None
    found = (table.schema.metadata or {}).get(FORMAT_KEY)
    if found != expected_format:
        raise SegmentFormatError(f"{path}: format {found!r}, expected {expected_format!r}")
    return table


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
