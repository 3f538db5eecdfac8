"""The update loops' loss sums: averaged into named summaries, and an update that returns other scalars named."""

import pytest
import tensorflow as tf

from rlengine.api.data import LossInfo
from rlengine.errors import SpecMismatchError
from rlengine.learn.loss_totals import LossTotals

SPEC = LossInfo(tf.TensorSpec([], tf.float32), {"pg": tf.TensorSpec([], tf.float32), "ent": tf.TensorSpec([], tf.float32)},
                diagnostics={"kl": tf.TensorSpec([], tf.float32)})


def loss(total, pg, ent, kl):
    return LossInfo(tf.constant(total), {"pg": tf.constant(pg), "ent": tf.constant(ent)},
                    diagnostics={"kl": tf.constant(kl)})


def test_sums_average_into_one_summary_per_scalar():
    totals = LossTotals(SPEC, "Toy")
    sums = totals.add(totals.add(totals.zeros(), loss(1.0, 2.0, 3.0, 4.0)), loss(3.0, 4.0, 5.0, 8.0))
    averages = {k: float(v) for k, v in totals.averages(sums, 2).items()}
    assert averages == {"loss/total": 2.0, "loss/pg": 3.0, "loss/ent": 4.0, "diagnostics/kl": 6.0}


def test_a_missing_term_is_named_with_the_algorithm():
    totals = LossTotals(SPEC, "Toy")
    other = LossInfo(tf.constant(1.0), {"pg": tf.constant(2.0)}, diagnostics={"kl": tf.constant(0.0)})
    with pytest.raises(SpecMismatchError, match=r"algorithm Toy: train_complete\(\) returned \['loss/total', 'loss/pg'"):
        totals.add(totals.zeros(), other)


def test_a_term_of_another_dtype_or_size_is_named():
    totals = LossTotals(SPEC, "Toy")
    wide = LossInfo(tf.constant(1.0), {"pg": tf.constant([2.0, 3.0]), "ent": tf.constant(0.0)},
                    diagnostics={"kl": tf.constant(0.0)})
    with pytest.raises(SpecMismatchError, match=r"returned loss/pg as float32\(2,\) against float32\(\)"):
        totals.add(totals.zeros(), wide)
    double = loss(1.0, 2.0, 3.0, 4.0)._replace(diagnostics={"kl": tf.constant(0.0, tf.float64)})
    with pytest.raises(SpecMismatchError, match=r"returned diagnostics/kl as float64"):
        totals.add(totals.zeros(), double)
