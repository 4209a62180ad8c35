"""Maps a function defined in __main__ over a spawn-started process pool (the child re-imports this file)."""
import multiprocessing


def square(x):
    return x * x


if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.map(square, [1, 2, 3]))
