"""Code-aware analysis of text into index terms: split identifiers, keep them whole, stem prose.

A raw token is a run of ASCII letters, digits and underscores (the same rule on the index and
the query side, so the two always agree). A token that is one word (`rotation`) becomes its
stem (`rotat`); an identifier of several parts (`getUserName`, `get_user_name`) becomes the
lower-cased whole (`getusername`, `get_user_name`) plus the stems of its parts (`get`, `user`,
`name`). Stop words (English and the commonest code keywords) are dropped as parts, never as
whole identifiers.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

import Stemmer

WORD_CHARACTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
"""What raw tokens are made of: ASCII only, so that the index side may read bytes."""
STEMMER_LANGUAGE: Final = "english"
MIN_TOKEN_CHARS: Final = 2
MAX_TOKEN_CHARS: Final = 64
"""Longer runs are hashes, base64 or generated tables: never a word anyone searches for."""

_WORD = f"[{WORD_CHARACTERS}]"
# A whole run of word characters within the length limits (a longer run gives no token).
_RAW_TOKEN = re.compile(rf"(?<!{_WORD}){_WORD}{{{MIN_TOKEN_CHARS},{MAX_TOKEN_CHARS}}}(?!{_WORD})")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

ENGLISH_STOP_WORDS: Final = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "etc",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "ll",
        "me",
        "might",
        "more",
        "most",
        "must",
        "mustn",
        "my",
        "myself",
        "need",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "re",
        "same",
        "shall",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "ve",
        "very",
        "via",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "may",
        "e",
        "g",
        "eg",
        "ie",
        "one",
        "two",
        "use",
        "used",
        "using",
        "want",
        "wants",
        "get",
        "gets",
        "got",
        "like",
        "see",
        "seems",
        "seem",
        "something",
        "thing",
        "things",
        "way",
        "ways",
        "work",
        "works",
    ]
)
CODE_STOP_WORDS: Final = frozenset(
    [
        "def",
        "return",
        "returns",
        "import",
        "elif",
        "else",
        "self",
        "cls",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "const",
        "var",
        "function",
        "func",
        "fn",
        "pub",
        "public",
        "private",
        "protected",
        "static",
        "void",
        "int",
        "char",
        "unsigned",
        "signed",
        "long",
        "short",
        "struct",
        "typedef",
        "sizeof",
        "include",
        "define",
        "ifdef",
        "ifndef",
        "endif",
        "undef",
        "pragma",
        "new",
        "try",
        "except",
        "catch",
        "finally",
        "raise",
        "throw",
        "throws",
        "pass",
        "break",
        "continue",
        "case",
        "switch",
        "default",
        "goto",
        "package",
        "extends",
        "implements",
        "async",
        "await",
        "yield",
        "lambda",
        "assert",
        "del",
        "global",
        "nonlocal",
        "mut",
        "crate",
        "super",
        "extern",
        "inline",
        "volatile",
        "register",
        "auto",
        "enum",
        "union",
        "bool",
        "float",
        "double",
        "println",
        "printf",
    ]
)
STOP_WORDS: Final = ENGLISH_STOP_WORDS | CODE_STOP_WORDS

_stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)


def raw_tokens(text: str) -> list[str]:
    """The raw tokens of `text`: its runs of ASCII letters, digits and underscores of
    MIN_TOKEN_CHARS to MAX_TOKEN_CHARS characters (shorter or longer ones mean nothing)."""
    return _RAW_TOKEN.findall(text)


def identifier_parts(token: str) -> list[str]:
    """The lower-cased words of an identifier: `getHTTPResponse_v2` -> get, http, response, v2."""
    return [p.lower() for p in _PART.findall(token)]


def analyze_tokens(tokens: list[str]) -> list[list[str]]:
    """For each raw token, the index terms it stands for (possibly none).

    Stemming runs once over all the parts (PyStemmer is C, called per list, not per word);
    a plain lower-case word skips the identifier regex.
    """
    per_token_parts: list[list[str]] = []
    flat: list[str] = []
    for token in tokens:
        if token.isalpha() and token.islower():
            parts = [token]
        else:
            parts = [p for p in identifier_parts(token) if len(p) >= MIN_TOKEN_CHARS]
        per_token_parts.append(parts)
        flat.extend(parts)
    stems = iter(_stemmer.stemWords(flat))
    result: list[list[str]] = []
    for token, parts in zip(tokens, per_token_parts, strict=True):
        terms = [
            stem
            for part in parts
            if (stem := next(stems)) not in STOP_WORDS and part not in STOP_WORDS
        ]
        if len(parts) > 1:
            terms.append(token.lower())
        elif parts:
            whole = token.lower()
            if whole != parts[0] and whole.strip("_") != parts[0]:
                terms.append(whole)
        result.append(terms)
    return result


@lru_cache(maxsize=65536)
def token_terms(token: str) -> tuple[str, ...]:
    """The index terms of one raw token (cached: queries repeat the same words)."""
    return tuple(analyze_tokens([token])[0])


def text_terms(text: str) -> list[str]:
    """Every index term occurrence in `text`, in order (a term repeats as often as it occurs)."""
    return [term for token in raw_tokens(text) for term in token_terms(token)]


def informative_terms(query: str) -> list[str]:
    """The query's informative terms, distinct, in order of first appearance.

    Empty when the query has none (only stop words, one-character tokens, `*`, punctuation):
    the caller answers REQUEST_TOO_BROAD then.
    """
    return list(dict.fromkeys(text_terms(query)))
