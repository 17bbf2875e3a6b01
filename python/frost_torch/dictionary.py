"""fairseq's Dictionary: `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, then one word per line of `dict.LANG.txt`
("word count", most frequent first), which is the file fairseq-preprocess writes and fairseq reads."""

from collections import Counter

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
BOS, PAD, EOS, UNK = range(4)


class Dictionary:
    def __init__(self, counts: list):
        self.counts = counts
        self.words = SPECIALS + [w for w, _ in counts]
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, lines: list, min_count: int = 1) -> "Dictionary":
        counter = Counter(w for line in lines for w in line.split())
        # Most frequent first, ties by the word, as fairseq's finalize sorts them.
        ranked = sorted(((w, c) for w, c in counter.items() if c >= min_count), key=lambda wc: (-wc[1], wc[0]))
        return cls(ranked)

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, line: str) -> list:
        """A source or target line as fairseq binarises it: its words, then `</s>`."""
        return [self.index.get(w, UNK) for w in line.split()] + [EOS]

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{w} {c}\n" for w, c in self.counts)
