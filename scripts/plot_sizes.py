"""The one way sizes are written in plots: the rule of features/size_text.h (a test holds them equal)."""
import sys


def size_text(b):
    """8 B, 512K, 1.5M, 4G (K = 1024 bytes): a whole number of the largest unit when exact, else one decimal."""
    b = int(b)
    if b < 1024:
        return f"{b} B"
    units, u, whole, exact = "KMGTPE", 0, b // 1024, b % 1024 == 0
    while whole >= 1024 and u < 5:
        exact = exact and whole % 1024 == 0
        whole //= 1024
        u += 1
    if exact:
        return f"{whole}{units[u]}"
    x = b / 1024 ** (u + 1)
    if x >= 1023.95 and u < 5:  # never "1024.0K": one more unit
        x, u = x / 1024, u + 1
    return f"{x:.1f}{units[u]}"


if __name__ == "__main__":  # size_text of each argument, one per line (the test compares them with C++)
    for arg in sys.argv[1:]:
        print(size_text(arg))
