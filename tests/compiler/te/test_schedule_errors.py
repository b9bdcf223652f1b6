"""Primitives that cannot apply raise ScheduleError naming the stage, the axis and the fix."""

import pytest

from compiler import te, tir


def two_stages():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2.0, name="C")
    D = te.compute((8, 8), lambda i, j: A[i, j] * 3.0, name="D")
    return A, B, C, D


def test_split_axis_of_another_stage():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match=r"split: axis 'i' is not a loop of stage 'C' \(its loops: "
                       r"i, j\); use an axis of this stage's op or one returned by split/fuse on it"):
        s[C].split(B.op.axis[0], 2)


def test_split_axis_already_split():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    i = C.op.axis[0]
    s[C].split(i, 2)
    with pytest.raises(te.ScheduleError, match=r"its loops: i.outer, i.inner, j"):
        s[C].split(i, 4)


@pytest.mark.parametrize("kwargs,msg", [
    ({"factor": 0}, "factor/nparts must be a positive int, not 0"),
    ({}, "give exactly one of factor= or nparts=, not factor=None, nparts=None"),
    ({"factor": 2, "nparts": 2}, "give exactly one of factor= or nparts="),
])
def test_split_bad_factor(kwargs, msg):
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match=f"split of 'i' in stage 'C': {msg}"):
        s[C].split(C.op.axis[0], **kwargs)


def test_compute_at_consumer_that_does_not_read():
    A, B, C, D = two_stages()
    s = te.create_schedule([C, D])
    with pytest.raises(te.ScheduleError, match=r"compute_at: stage 'D' does not read 'B'; attach 'B' to "
                       r"a stage that reads it \(readers: C\)"):
        s[B].compute_at(s[D], D.op.axis[0])


def test_compute_at_axis_not_in_consumer():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match="compute_at: axis 'i' is not a loop of stage 'C'"):
        s[B].compute_at(s[C], B.op.axis[0])


def test_fuse_not_adjacent():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.compute((2, 3, 4), lambda a, b, c: A[a, b, c], name="B")
    s = te.create_schedule(B)
    a, b, c = B.op.axis
    with pytest.raises(te.ScheduleError, match=r"fuse: axes a, c of stage 'B' are not adjacent in loop "
                       r"order \(a, b, c\); reorder them first"):
        s[B].fuse(a, c)


def test_fuse_spatial_with_reduce_and_parallel_reduce():
    A = te.placeholder((4, 4), name="A")
    r = te.reduce_axis(4, "r")
    B = te.compute((4,), lambda i: te.sum(A[i, r], axis=r), name="B")
    s = te.create_schedule(B)
    with pytest.raises(te.ScheduleError, match=r"fuse: stage 'B' cannot fuse data-parallel and reduce "
                       r"axes \(i, r\)"):
        s[B].fuse(B.op.axis[0], r)
    with pytest.raises(te.ScheduleError, match="parallel: axis 'r.inner' of stage 'B' is a reduction axis"):
        s[B].parallel(s[B].split(r, 2)[1])


def test_compute_inline_reduction_and_output():
    A = te.placeholder((4, 4), name="A")
    r = te.reduce_axis(4, "r")
    B = te.compute((4,), lambda i: te.sum(A[i, r], axis=r), name="B")
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match="compute_inline: stage 'B' is a reduction"):
        s[B].compute_inline()
    with pytest.raises(te.ScheduleError, match="compute_inline: stage 'C' is an output"):
        s[C].compute_inline()


def test_cache_write_after_split():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    s[C].split(C.op.axis[0], 2)
    with pytest.raises(te.ScheduleError, match="cache_write: stage 'C' already has loop transformations"):
        s.cache_write(C, "local")


def test_lower_without_placeholder_argument():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match="lower: stage 'B' reads placeholder 'A', which is not in "
                       "the arguments; add it to args"):
        tir.lower(s, [C], "f")


def test_compute_at_with_second_reader():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((4,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D)
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(te.ScheduleError, match="compute_at: stage 'B' is attached to axis 'i' of 'C' but "
                       "also read by D, which is not computed at that axis or inside it; compute it "
                       "at root, "
                       "cache_read it per reader"):
        tir.lower(s, [A, D], "f")


def test_storage_align_bad_axis():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match=r"storage_align: 'i' is not an output axis of stage 'B' "
                       r"\(axes: i, j\)"):
        s[B].storage_align(C.op.axis[0], 4, 0)


def test_placeholder_has_no_stage_and_nested_reduce():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    with pytest.raises(te.ScheduleError, match="placeholder 'A' has no stage"):
        s[A]
    r = te.reduce_axis(8, "r")
    with pytest.raises(ValueError, match="compute 'E': a reduction must be the whole body"):
        te.compute((8,), lambda i: te.sum(A[i, r], axis=r) + 1.0, name="E")


def test_compute_at_axis_split_afterwards():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].split(C.op.axis[0], 2)
    with pytest.raises(te.ScheduleError, match="compute_at: stage 'B' is attached to axis 'i' of 'C', "
                       "which was split or fused afterwards; attach it to one of the new axes"):
        tir.lower(s, [A, C], "f")


def test_argument_that_is_inlined():
    A, B, C, D = two_stages()
    s = te.create_schedule(C)
    s[B].compute_inline()
    with pytest.raises(te.ScheduleError, match=r"lower: argument 'B' is inlined; an argument must be "
                       r"computed at root \(compute_root\)"):
        tir.lower(s, [A, B, C], "f")
