"""The student guide's worked example: one 2x2 tile of C = A @ B, computed K tile by K tile.

A is 4x6 and B is 6x8, so C is 4x8. With 2x2 tiles, C tile (0, 1) covers
C[0:2, 2:4]: it needs rows 0:2 of A and columns 2:4 of B, and K = 6 splits into
three K tiles of width 2. Only those rows and columns matter, so only they are
written out here. Plain PyTorch, on the CPU: no kernel is built.

    python docs/examples/one_tile.py
"""

import torch

A_ROWS_0_2 = torch.tensor([[1, 2, 3, 4, 5, 6],
                           [0, 1, 0, 1, 0, 1]])
B_COLS_2_4 = torch.tensor([[1, 0],
                           [0, 1],
                           [1, 1],
                           [0, 1],
                           [1, 0],
                           [1, 1]])
TILE = 2


def main():
    element = int(A_ROWS_0_2[0] @ B_COLS_2_4[:, 0])
    terms = " + ".join(f"{a}*{b}" for a, b in zip(A_ROWS_0_2[0].tolist(), B_COLS_2_4[:, 0].tolist()))
    print(f"C[0, 2] = {terms} = {element}")
    print()

    accumulator = torch.zeros((TILE, TILE), dtype=torch.int64)
    for k in range(A_ROWS_0_2.shape[1] // TILE):
        cols = slice(k * TILE, (k + 1) * TILE)
        partial = A_ROWS_0_2[:, cols] @ B_COLS_2_4[cols, :]
        accumulator += partial
        print(f"K tile {k} (A columns / B rows {cols.start}:{cols.stop}): "
              f"A0{k} @ B{k}1 = {partial.tolist()}, running sum {accumulator.tolist()}")
    print()

    whole = A_ROWS_0_2 @ B_COLS_2_4
    print(f"C tile (0, 1) = C[0:2, 2:4] = {accumulator.tolist()}")
    print(f"same as computing it in one go: {torch.equal(accumulator, whole)}")


if __name__ == "__main__":
    main()
