"""How an on-policy batch is cut into minibatches, in graph.

The learner runs every epoch's minibatches in one ``tf.while_loop``: it asks
:func:`minibatch_layout` for the counts once, then ``pick(u)`` from
:func:`minibatch_picker` for the rows of update ``u``::

    num_rows, size, num_minibatches = minibatch_layout(flat[0], mini_batch_size)
    pick = minibatch_picker(flat, num_epochs, num_rows, size, num_minibatches)
    for u in range(num_epochs * num_minibatches):   # a graph loop
        update(pick(u))
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from rlengine.api import seeding


def minibatch_layout(rows: tf.Tensor, mini_batch_size: int) -> tuple:
    """``(number of rows, rows per minibatch, number of minibatches)`` of a ``[N, ...]`` batch.

    Python ints when N is static (fixed unroll length and copies), so each minibatch
    has a static shape and the gradients' shape arithmetic folds away when traced:
    about a tenth of a PPO CartPole update. Otherwise the counts are tensors. A
    minibatch larger than the batch is the whole batch; rows past the last whole
    minibatch are left out; a batch without rows makes one empty minibatch.
    """
    static = rows.shape[0]
    if static is None:
        num_rows = tf.shape(rows)[0]
        size = mini_batch_size or tf.maximum(num_rows, 1)  # 0: every row; of none, one empty minibatch
        return num_rows, size, tf.maximum(num_rows // size, 1)
    size = min(mini_batch_size or static, static) or 1
    return static, size, max(static // size, 1)  # no rows: one empty update, as with unknown shapes


def minibatch_picker(flat: list, num_epochs: int, num_rows: Any, size: Any, num_minibatches: Any) -> Callable:
    """``pick(u)``: the flat tensors of update ``u``'s minibatch, ``u`` counting every epoch's minibatches.

    Every epoch's order is drawn at once. When the row count is known when traced and
    one minibatch holds every row (PPO CartPole's default), the rows are not shuffled:
    the order would change only how they are summed, and the shuffle and gathers took
    about a quarter of that update.
    """
    if isinstance(num_rows, int) and size == num_rows:
        return lambda u: flat
    epoch_orders = seeding.orders(num_epochs, num_rows)

    def pick(u: Any) -> list:
        i = u % num_minibatches
        rows = epoch_orders[u // num_minibatches, i * size:(i + 1) * size]
        if isinstance(num_rows, int):  # static: (i + 1) * size <= num_rows, every minibatch is whole
            rows.set_shape([min(size, num_rows)])
        return [tf.gather(t, rows) for t in flat]

    return pick


def swap_leading(t: Any) -> Any:
    """``[T, B, ...]`` <-> ``[B, T, ...]``."""
    return tf.transpose(t, [1, 0, *range(2, len(t.shape))])
