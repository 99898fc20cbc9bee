"""Deterministic text embeddings by feature hashing, in pure Python.

Each word and each character trigram of a word adds +1 or -1 (chosen by a hash) to one
coordinate (also chosen by a hash); the sum is scaled to unit length. Texts that share words
and word pieces get close vectors, unrelated texts nearly orthogonal ones. The lab's data loader
imports `embed_text` to give historical tickets vectors consistent with the simulator's.
"""

import array
import base64
import functools
import math
import re
import sys
import zlib

DEFAULT_DIMENSIONS = 1536
MAX_DIMENSIONS = 3072
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
WORD_PATTERN = re.compile(r"\w+")
# Words that every ticket has: left out so that unrelated tickets do not look alike.
STOP_WORDS = frozenset(
    "a an and are as at be but by can could do for from has have hello hi how i if in is it its me my "
    "no not of on or our please so that the their them there this to us was we were what when which "
    "with would you your thanks thank".split()
)


def embed_text(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """A unit-length vector for the text: equal texts give equal vectors, similar texts close ones."""
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise ValueError(f"dimensions must be between 1 and {MAX_DIMENSIONS}")
    vector = [0.0] * dimensions
    for word in WORD_PATTERN.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        for index, weight in _word_features(word, dimensions):
            vector[index] += weight
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0.0:
        # A text with no content words still gets a fixed unit vector, as the contract promises.
        vector[0] = 1.0
        return vector
    scale = 1.0 / norm
    return [value * scale for value in vector]


@functools.lru_cache(maxsize=65536)
def _word_features(word: str, dimensions: int) -> tuple[tuple[int, float], ...]:
    """The (coordinate, signed weight) pairs of one word: the word itself and its trigrams."""
    encoded = word.encode()
    features = [_feature(b"w:" + encoded, dimensions, WORD_WEIGHT)]
    padded = b"<" + encoded + b">"
    features.extend(_feature(padded[start : start + 3], dimensions, TRIGRAM_WEIGHT) for start in range(len(padded) - 2))
    return tuple(features)


def _feature(token: bytes, dimensions: int, weight: float) -> tuple[int, float]:
    """Hash a token to a coordinate and a sign. crc32 is stable across processes, unlike hash()."""
    hashed = zlib.crc32(token)
    return hashed % dimensions, (weight if hashed & 0x80000000 else -weight)


def to_base64(vector: list[float]) -> str:
    """The vector as OpenAI's `encoding_format: "base64"` sends it: little-endian float32, base64."""
    packed = array.array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode("ascii")
