"""Whether TensorFlow can read a checkpoint's files: the damage its marker cannot see.

A marker's sizes and checksums (:mod:`rlengine.run.checkpoints.files`) tell
that the files are the ones it was written with, not that those are a
checkpoint: files replaced together with their marker (a copy or sync tool
that rewrote both, a marker made again over garbage) match it, and a marker
of an earlier version records no checksums at all. So when a restore fails,
the checkpoint is read once more by TensorFlow's own reader, whole: the index
(a table whose blocks carry checksums) and every tensor (each checked
against the CRC the index records). What it cannot read is damage, like a
checksum mismatch; only a checkpoint that reads whole and still does not
restore was written for other objects (another algorithm or network shape).

The read happens only after a restore failed, never on the way to a good
one. It reads one tensor at a time, so it needs no more memory than the
largest tensor, which the restore would have needed too.
"""

from __future__ import annotations

import re

import tensorflow as tf

from rlengine.errors import telling_line

#: What TensorFlow raises for files it cannot read (NotFoundError: a file gone, e.g. pruned meanwhile);
#: a data file shorter than its index says is an IndexError from the reader's Python half.
READ_ERRORS = (tf.errors.DataLossError, tf.errors.NotFoundError, tf.errors.OutOfRangeError, IndexError)


def unreadable(prefix: str) -> str:
    """What TensorFlow's reader cannot read of checkpoint ``prefix``; "" when it reads whole."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        for key in sorted(reader.get_variable_to_dtype_map()):
            reader.get_tensor(key)  # checked against its CRC in the index; dropped at once
    except (tf.errors.OpError, ValueError, IndexError) as exc:
        return tensorflow_line(exc)
    return ""


def tensorflow_line(error: BaseException) -> str:
    """The telling line of a TensorFlow error without its ``{{function_node ...}}`` and ``[Op:...]`` wrapping."""
    line = telling_line(str(error)) or type(error).__name__
    return re.sub(r"^\{\{[^}]*\}\}\s*|\s*\[Op:\w+\]$", "", line)
