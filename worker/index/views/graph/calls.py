"""What each call of a commit names: its file, the entity it is made in and the chain it
writes, resolved by the scopes' rules (see `scope`); plain C names all at once."""

from __future__ import annotations

import re
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.analysis.distinct import distinct
from worker.index.views.graph.edge_keys import edge_keys
from worker.index.views.graph.gathered import Gathered, PathGrammars
from worker.index.views.graph.model import EntityType, Relation
from worker.index.views.graph.plan import Plan
from worker.index.views.graph.reads import Phase, ReadKind, ReadTable, keyed_reads
from worker.index.views.graph.scope import MEMBER_SCOPED, SELF_NAMES, SUPER_WORDS, Scopes

I64: TypeAlias = npt.NDArray[np.int64]
_SEPARATORS: Final = re.compile(r"\.|::|->")
_ARROW_SELF: Final = frozenset({"this", "$this"})
"""What may start a `->` chain the graph resolves (C++ `this->x`, PHP `$this->x`); any other
object's type is unknown."""


def chain(text: str) -> tuple[str, ...]:
    """The names of a reference's chain (`a.b`, `a::b`, `a->b`).

    A tuple: the collector stops tracking a tuple of strings, not a list, and a build holds
    one per distinct callee text.
    """
    # Most chains are dotted only (every Python and JavaScript one): str.split is faster.
    return tuple(_SEPARATORS.split(text) if ":" in text or "-" in text else text.split("."))


def resolve_calls(
    scopes: Scopes,
    data: Gathered,
    plan: Plan,
    *,
    file_node: I64,
    types: npt.NDArray[np.uint8],
    parents: list[int],
    path_grammars: PathGrammars,
) -> tuple[I64, ReadTable]:
    """Edge keys of the calls the plan resolves that resolve, and the reads of C's plain
    calls.

    What a call means depends on its file, and on its class only where names reach into the
    class (`self.x`; Java and C++ methods): each distinct (file, class, callee) is resolved
    once, for the first call of it. Plain names called in C are resolved all at once.
    """
    calls = np.flatnonzero(data.relation == Relation.INVOKE)
    calls = calls[plan.resolving(file_node[data.reference_path[calls]], Phase.CALLS)]
    texts = data.target_array.take(pa.array(calls)).fill_null("")
    plain = ~pc.match_substring_regex(texts, r"[.:-]").to_numpy(zero_copy_only=False)
    path_rows = data.reference_path[calls]
    is_c = path_grammars.among("c")
    vector = plain & is_c[path_rows]
    picked = np.flatnonzero(vector)
    # Encoded once: the calls are resolved, and their reads keyed, by the distinct names.
    callees = texts.take(pa.array(picked)).dictionary_encode()
    resolved = _c_calls(data, is_c, path_rows[picked], callees)
    hit = resolved >= 0
    c_edges = edge_keys(data.holder[calls[picked]][hit], resolved[hit], int(Relation.INVOKE))
    c_reads = keyed_reads(file_node[path_rows[picked]], callees, ReadKind.NAME, Phase.CALLS)
    rest = np.flatnonzero(~vector)
    encoded = texts.take(pa.array(rest)).dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    distinct_texts: list[str] = encoded.dictionary.to_pylist()
    chains = [chain(text) for text in distinct_texts]
    # `a->b` is followed only from `this` (`$this`); any other object's type is unknown.
    followed = np.asarray(
        [
            not ("->" in text and chain[0] not in _ARROW_SELF)
            for text, chain in zip(distinct_texts, chains, strict=True)
        ],
        dtype=bool,
    )
    # Through `self` or `super`: what the call means depends on the class it is made in.
    through_self = np.asarray(
        [chain[0] in SELF_NAMES or chain[0] in SUPER_WORDS for chain in chains], dtype=bool
    )
    kept = np.flatnonzero(followed[code])
    rest, code = rest[kept], code[kept]
    holder = data.holder[calls[rest]]
    file = file_node[path_rows[rest]]
    selfish = through_self[code]
    need = np.flatnonzero(selfish | path_grammars.among(*MEMBER_SCOPED)[path_rows[rest]])
    context = np.full(len(rest), -2, dtype=np.int64)
    if len(need):
        holders = distinct(holder[need])
        first_entity = data.first_entity
        holder_files = np.where(
            holders >= first_entity,
            file_node[data.entity_path[np.maximum(holders - first_entity, 0)]],
            holders,
        )
        receiver = _receivers(scopes, holders, holder_files, parents)[
            np.searchsorted(holders, holder[need])
        ]
        # `this` outside a class is the function's own (`Scopes._owned`).
        outside = np.where(selfish[need], holder[need], -1)
        context[need] = np.where(receiver >= 0, receiver, outside)
    order = np.lexsort((code, context, file))
    leads = np.ones(len(order), dtype=bool)
    if len(order):
        by_file, by_context, by_code = file[order], context[order], code[order]
        leads[1:] = (
            (by_file[1:] != by_file[:-1])
            | (by_context[1:] != by_context[:-1])
            | (by_code[1:] != by_code[:-1])
        )
    first = order[leads]  # the first call of each group: lexsort is stable
    meaning = _meanings(
        scopes,
        file[first],
        holder[first],
        [chains[c] for c in code[first]],
        parents,
        few=plan.dirty_from is not None,
    )
    callee = np.empty(len(order), dtype=np.int64)
    callee[order] = meaning[np.cumsum(leads) - 1]
    found = callee >= 0
    callee_type = types[np.where(found, callee, 0)]
    is_callable = (callee_type == EntityType.FUNCTION) | (callee_type == EntityType.CLASS)
    # A class "calling" itself says nothing: its own constructor or destructor declared
    # (`~Shape();`), or a field made of it.
    itself = (callee == holder) & (types[holder] == EntityType.CLASS)
    keep = found & is_callable & ~itself
    edges = np.concatenate([c_edges, edge_keys(holder[keep], callee[keep], int(Relation.INVOKE))])
    return edges, c_reads


def _receivers(scopes: Scopes, holders: I64, files: I64, parents: list[int]) -> I64:
    """The class `self` means in each holder (in its file; -1: none)."""
    found = []
    reads, last = scopes.reads, -1
    for holder, file in zip(holders.tolist(), files.tolist(), strict=True):
        if file != last:  # the holders come file by file
            reads.at(file, Phase.CALLS)
            last = file
        receiver = scopes.receiver_class(holder, parents)
        found.append(-1 if receiver is None else receiver)
    return np.asarray(found, dtype=np.int64)


def _meanings(
    scopes: Scopes,
    files: I64,
    holders: I64,
    chains: list[tuple[str, ...]],
    parents: list[int],
    *,
    few: bool,
) -> I64:
    """What each call (its file, holder and chain of names) names (-1: nothing known).

    `few`: the calls of a few files (a carried build), whose global names (C's) are sought
    among the first names of their chains only; a qualified name is still answered.
    """
    if few:
        scopes.expect_only({chain[0] for chain in chains})
    found = []
    reads, last = scopes.reads, -1
    for file, holder, chain in zip(files.tolist(), holders.tolist(), chains, strict=True):
        if file != last:  # the calls come file by file
            reads.at(file, Phase.CALLS)
            last = file
        meaning = scopes.resolve_chain(file, holder, chain, parents)
        found.append(-1 if meaning is None else meaning)
    return np.asarray(found, dtype=np.int64)


def _c_calls(
    data: Gathered, is_c: npt.NDArray[np.bool_], path_rows: I64, encoded: pa.DictionaryArray
) -> I64:
    """The definition each plain C call names (its callee, dictionary-encoded; its file's
    path row): in its own file, else the only one there is."""
    call_code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    top = np.flatnonzero(data.entity_top & is_c[data.entity_path])
    known_codes = pc.index_in(data.name_array.take(pa.array(top)), value_set=encoded.dictionary)
    known = known_codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    defined = top[known >= 0]
    defined_code = known[known >= 0]
    n_codes = max(len(encoded.dictionary), 1)
    if not len(defined):
        return np.full(len(call_code), -1, dtype=np.int64)
    # The only definition of a name anywhere.
    count = np.bincount(defined_code, minlength=n_codes)
    only = np.full(n_codes, -1, dtype=np.int64)
    single = count[defined_code] == 1
    only[defined_code[single]] = defined[single] + data.first_entity
    resolved: I64 = only[call_code]
    # A definition in the caller's own file comes first (the first of its name there).
    file_key = data.entity_path[defined] * n_codes + defined_code
    order = np.argsort(file_key, kind="stable")
    sorted_key = file_key[order]
    call_key = path_rows * n_codes + call_code
    at = np.minimum(np.searchsorted(sorted_key, call_key), len(sorted_key) - 1)
    same_file = sorted_key[at] == call_key
    resolved[same_file] = defined[order[at[same_file]]] + data.first_entity
    return resolved
