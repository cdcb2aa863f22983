"""nn_cases.py - 77 extra node tests for the nn operators (Conv*, pools, normalizations, Resize,
GridSample, RoiAlign, ...) covering attributes ONNX's own node tests leave out: storage_order,
3-D pools with Indices, ceil_mode with padding, grouped/dilated/asymmetric convolutions,
ConvTranspose output_shape/output_padding/SAME, Resize antialias/axes/keep_aspect_ratio_policy/
tf_crop_and_resize/uint8, GridSample 3-D, RoiAlign max, 16-bit InstanceNormalization.

Writes them in the node-test layout (model.onnx, test_data_set_0/input_*.pb, output_*.pb); the
expected outputs come from onnxruntime, or from ONNX's reference evaluator (ref=True) where the
two disagree and ONNX's definition is the one kiln follows (each such case says why). Run:

    /work/peer-venv/bin/python tests/onnx/nn_cases.py /tmp/nn_cases
    KILN_ONNX_NODE_DIR=/tmp/nn_cases ./build/tests/onnx/test_onnx_nodes

Needs numpy, onnx and onnxruntime; not part of the build.
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator

OUT = sys.argv[1] if len(sys.argv) > 1 else '/tmp/nn_cases'
shutil.rmtree(OUT, ignore_errors=True)
rng = np.random.default_rng(0)


def f32(*s):
    return rng.standard_normal(s).astype(np.float32)


def case(name, op, inputs, outputs, attrs={}, opset=17, ref=False):
    """One single-node test: inputs are (name, array) pairs, None for an absent optional input."""
    node = h.make_node(op, [n if a is not None else '' for n, a in inputs], outputs, **attrs)
    gi = [h.make_tensor_value_info(n, h.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs if a is not None]
    g = h.make_graph([node], name, gi, [onnx.ValueInfoProto(name=o) for o in outputs])
    m = h.make_model(g, opset_imports=[h.make_opsetid('', opset)])
    m.ir_version = 8
    feeds = {n: a for n, a in inputs if a is not None}
    if ref:
        res = ReferenceEvaluator(m).run(None, feeds)
    else:
        res = ort.InferenceSession(m.SerializeToString(), providers=['CPUExecutionProvider']).run(None, feeds)
    del m.graph.output[:]
    for o, r in zip(outputs, res):
        r = np.asarray(r)
        m.graph.output.append(h.make_tensor_value_info(o, h.np_dtype_to_tensor_dtype(r.dtype), r.shape))
    d = os.path.join(OUT, 'test_nn_' + name)
    os.makedirs(d + '/test_data_set_0')
    onnx.save(m, d + '/model.onnx')
    for i, (n, a) in enumerate((n, a) for n, a in inputs if a is not None):
        with open(f'{d}/test_data_set_0/input_{i}.pb', 'wb') as f:
            f.write(nh.from_array(a, n).SerializeToString())
    for j, (o, r) in enumerate(zip(outputs, res)):
        with open(f'{d}/test_data_set_0/output_{j}.pb', 'wb') as f:
            f.write(nh.from_array(np.asarray(r), o).SerializeToString())


X = f32(1, 2, 5, 7)
E = np.array([], np.float32)
case('resize_linear_up', 'Resize', [('X', X), ('roi', None), ('scales', np.array([1, 1, 1.7, 2.3], np.float32))], ['Y'], dict(mode='linear'), 13)
case('resize_linear_down_sizes', 'Resize', [('X', X), ('roi', None), ('scales', None), ('sizes', np.array([1, 2, 3, 4], np.int64))], ['Y'], dict(mode='linear'), 13)
case('resize_cubic_asym_sizes', 'Resize', [('X', X), ('roi', None), ('scales', None), ('sizes', np.array([1, 2, 9, 4], np.int64))], ['Y'], dict(mode='cubic', coordinate_transformation_mode='asymmetric'), 13)
case('resize_cubic_excl', 'Resize', [('X', X), ('roi', None), ('scales', np.array([1, 1, 0.6, 1.5], np.float32))], ['Y'], dict(mode='cubic', exclude_outside=1, cubic_coeff_a=-0.5), 13)
case('resize_nearest_axes_keep', 'Resize', [('X', X), ('roi', None), ('scales', None), ('sizes', np.array([8, 8], np.int64))], ['Y'], dict(mode='nearest', axes=[2, 3], keep_aspect_ratio_policy='not_larger'), 18)
case('resize_nearest_axes_keep_small', 'Resize', [('X', X), ('roi', None), ('scales', None), ('sizes', np.array([8, 8], np.int64))], ['Y'], dict(mode='nearest', axes=[3, 2], keep_aspect_ratio_policy='not_smaller', nearest_mode='ceil'), 18)
case('resize_crop', 'Resize', [('X', X), ('roi', np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], np.float32)), ('scales', None), ('sizes', np.array([1, 2, 4, 5], np.int64))], ['Y'], dict(mode='linear', coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=7.0), 13)
case('resize_uint8_linear', 'Resize', [('X', (rng.random((1, 1, 4, 5)) * 255).astype(np.uint8)), ('roi', None), ('scales', np.array([1, 1, 2, 1.5], np.float32))], ['Y'], dict(mode='linear'), 13, ref=True)  # onnxruntime truncates; ONNX rounds (saturate_cast)
case('resize_v10_nearest', 'Resize', [('X', X), ('scales', np.array([1, 1, 2, 3], np.float32))], ['Y'], dict(mode='nearest'), 10)
case('resize_v10_linear', 'Resize', [('X', X), ('scales', np.array([1, 1, 2, 1.5], np.float32))], ['Y'], dict(mode='linear'), 10)
case('resize_symmetric', 'Resize', [('X', X), ('roi', None), ('scales', np.array([1, 1, 1.3, 0.7], np.float32))], ['Y'], dict(mode='linear', coordinate_transformation_mode='half_pixel_symmetric'), 19)
case('resize_pytorch_hp_1', 'Resize', [('X', X), ('roi', None), ('scales', None), ('sizes', np.array([1, 2, 1, 3], np.int64))], ['Y'], dict(mode='linear', coordinate_transformation_mode='pytorch_half_pixel'), 13)
case('resize_nearest_3d', 'Resize', [('X', f32(1, 1, 3, 4, 5)), ('roi', None), ('scales', np.array([1, 1, 2, 0.5, 1.5], np.float32))], ['Y'], dict(mode='nearest', coordinate_transformation_mode='half_pixel', nearest_mode='round_prefer_ceil'), 13)
case('upsample9_linear', 'Upsample', [('X', X), ('scales', np.array([1, 1, 2, 2], np.float32))], ['Y'], dict(mode='linear'), 9)
case('upsample7_nearest', 'Upsample', [('X', X)], ['Y'], dict(mode='nearest', scales=[1.0, 1.0, 2.0, 3.0]), 7)
# pools
P = f32(2, 3, 7, 8)
case('maxpool_idx_so1', 'MaxPool', [('X', P)], ['Y', 'I'], dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], storage_order=1), 12)
case('maxpool_idx_3d', 'MaxPool', [('X', f32(1, 2, 4, 5, 6))], ['Y', 'I'], dict(kernel_shape=[2, 2, 3], strides=[2, 1, 2]), 12)
case('maxpool_ceil_pads', 'MaxPool', [('X', P)], ['Y'], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1), 12)
case('maxpool_dil_idx', 'MaxPool', [('X', P)], ['Y', 'I'], dict(kernel_shape=[2, 2], dilations=[2, 3]), 12)
case('avgpool_ceil_incl', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1), 12)
case('avgpool_ceil_excl', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[3, 2], strides=[2, 3], pads=[0, 1, 1, 0], ceil_mode=1), 12)
case('avgpool_dil19', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1]), 19)
case('avgpool_same_lower', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[3, 4], strides=[2, 3], auto_pad='SAME_LOWER', count_include_pad=1), 12)
case('lppool', 'LpPool', [('X', P)], ['Y'], dict(kernel_shape=[2, 3], strides=[1, 2], p=3, pads=[1, 0, 0, 1]), 11)
case('globallppool', 'GlobalLpPool', [('X', P)], ['Y'], dict(p=1), 2)
case('maxunpool_pads', 'MaxUnpool', [('X', f32(1, 2, 3, 3)), ('I', np.array([[[[0, 3, 5], [12, 14, 17], [30, 32, 35]], [[36, 39, 41], [48, 50, 53], [66, 68, 71]]]], np.int64))], ['Y'], dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]), 11)
# conv
case('conv_group_dil', 'Conv', [('X', f32(2, 4, 9, 8)), ('W', f32(6, 2, 3, 2)), ('B', f32(6))], ['Y'], dict(group=2, dilations=[2, 1], strides=[1, 2], pads=[1, 0, 2, 1]), 11)
case('conv_1d_same_lower', 'Conv', [('X', f32(1, 3, 10)), ('W', f32(2, 3, 4))], ['Y'], dict(auto_pad='SAME_LOWER', strides=[3]), 11)
case('conv_3d_bias', 'Conv', [('X', f32(1, 2, 5, 6, 4)), ('W', f32(3, 2, 2, 3, 2)), ('B', f32(3))], ['Y'], dict(pads=[1, 0, 1, 0, 1, 1]), 11)
case('convt_group_outpad', 'ConvTranspose', [('X', f32(1, 4, 3, 4)), ('W', f32(4, 3, 3, 2)), ('B', f32(6))], ['Y'], dict(group=2, strides=[3, 2], output_padding=[2, 1], pads=[1, 0, 0, 1], dilations=[1, 2]), 11)
case('convt_same_upper', 'ConvTranspose', [('X', f32(1, 2, 3, 4)), ('W', f32(2, 3, 3, 3)), ('B', f32(3))], ['Y'], dict(strides=[2, 2], auto_pad='SAME_UPPER'), 11)
case('convt_same_lower', 'ConvTranspose', [('X', f32(1, 2, 3, 4)), ('W', f32(2, 3, 4, 3))], ['Y'], dict(strides=[2, 2], auto_pad='SAME_LOWER'), 11)
case('convt_outshape_bias', 'ConvTranspose', [('X', f32(1, 2, 3, 3)), ('W', f32(2, 3, 3, 3)), ('B', f32(3))], ['Y'], dict(strides=[2, 2], output_shape=[6, 5]), 11)
case('convt_1d', 'ConvTranspose', [('X', f32(2, 3, 5)), ('W', f32(3, 2, 3))], ['Y'], dict(strides=[2], pads=[1, 2]), 11)
# norms
B = f32(2, 3, 4, 5)
case('bn_train15', 'BatchNormalization', [('X', B), ('s', f32(3)), ('b', f32(3)), ('m', f32(3)), ('v', np.abs(f32(3)))], ['Y', 'rm', 'rv'], dict(training_mode=1, momentum=0.8), 15, ref=True)  # onnxruntime runs no training mode
case('bn_inf15', 'BatchNormalization', [('X', B), ('s', f32(3)), ('b', f32(3)), ('m', f32(3)), ('v', np.abs(f32(3)))], ['Y'], dict(epsilon=1e-3), 15)
case('ln_outputs', 'LayerNormalization', [('X', B), ('s', f32(4, 5)), ('b', f32(4, 5))], ['Y', 'M', 'I'], dict(axis=2, epsilon=1e-3), 17)
case('gn18', 'GroupNormalization', [('X', f32(2, 6, 3, 3)), ('s', f32(3)), ('b', f32(3))], ['Y'], dict(num_groups=3), 18, ref=True)  # onnxruntime's GroupNormalization-18 is deprecated
case('gn21', 'GroupNormalization', [('X', f32(2, 6, 3, 3)), ('s', f32(6)), ('b', f32(6))], ['Y'], dict(num_groups=2, epsilon=1e-3), 21)
case('instnorm_3d', 'InstanceNormalization', [('X', f32(2, 3, 4)), ('s', f32(3)), ('b', f32(3))], ['Y'], dict(epsilon=1e-2), 11)
case('lpnorm_p1', 'LpNormalization', [('X', B)], ['Y'], dict(p=1, axis=0), 11)
case('lpnorm_p2', 'LpNormalization', [('X', B)], ['Y'], dict(p=2, axis=1), 11)
case('mvn_axes', 'MeanVarianceNormalization', [('X', B)], ['Y'], dict(axes=[1, 3]), 13)
case('d2s_crd', 'DepthToSpace', [('X', f32(2, 8, 2, 3))], ['Y'], dict(blocksize=2, mode='CRD'), 13)
case('s2d', 'SpaceToDepth', [('X', f32(2, 2, 4, 6))], ['Y'], dict(blocksize=2), 13)
case('dropout12_mask', 'Dropout', [('X', B), ('r', np.array(0.3, np.float32))], ['Y', 'M'], {}, 12)
# sampling
case('gridsample20_3d', 'GridSample', [('X', f32(1, 2, 3, 4, 5)), ('G', (rng.random((1, 2, 3, 2, 3)) * 2.4 - 1.2).astype(np.float32))], ['Y'], dict(mode='linear', padding_mode='reflection'), 20)
case('gridsample_cubic_border', 'GridSample', [('X', f32(2, 2, 4, 5)), ('G', (rng.random((2, 3, 4, 2)) * 2.4 - 1.2).astype(np.float32))], ['Y'], dict(mode='cubic', padding_mode='border', align_corners=1), 20, ref=True)  # onnxruntime's cubic border taps differ from ONNX's
case('gridsample_nearest_refl_ac', 'GridSample', [('X', f32(2, 2, 4, 5)), ('G', (rng.random((2, 3, 4, 2)) * 3 - 1.5).astype(np.float32))], ['Y'], dict(mode='nearest', padding_mode='reflection', align_corners=1), 16)
case('roialign_max', 'RoiAlign', [('X', f32(2, 3, 6, 7)), ('rois', np.array([[0, 0, 3, 4], [1.5, 2, 6.5, 5], [-1, 0, 2, 9]], np.float32)), ('bi', np.array([0, 1, 1], np.int64))], ['Y'], dict(mode='max', output_height=2, output_width=3, sampling_ratio=2, spatial_scale=0.9), 16)
case('roialign_avg_v10', 'RoiAlign', [('X', f32(2, 3, 6, 7)), ('rois', np.array([[0, 0, 3, 4], [1.5, 2, 6.5, 5], [-1, 0, 2, 9]], np.float32)), ('bi', np.array([0, 1, 1], np.int64))], ['Y'], dict(output_height=3, output_width=2, spatial_scale=0.9), 10)
X2 = f32(1, 2, 9, 11)
case('resize_aa_linear', 'Resize', [('X', X2), ('roi', None), ('scales', np.array([1, 1, 0.4, 0.6], np.float32))], ['Y'], dict(mode='linear', antialias=1), 18)
case('resize_aa_cubic_sizes', 'Resize', [('X', X2), ('roi', None), ('scales', None), ('sizes', np.array([1, 2, 4, 3], np.int64))], ['Y'], dict(mode='cubic', antialias=1), 18)
case('resize_aa_cubic_excl_up_ref', 'Resize', [('X', X2), ('roi', None), ('scales', np.array([1, 1, 0.5, 1.5], np.float32))], ['Y'], dict(mode='cubic', antialias=1, exclude_outside=1, coordinate_transformation_mode='align_corners'), 18, ref=True)  # onnxruntime's align_corners uses the rounded length
case('resize_aa_cubic_excl_ort', 'Resize', [('X', X2), ('roi', None), ('scales', np.array([1, 1, 0.5, 1], np.float32))], ['Y'], dict(mode='cubic', antialias=1, exclude_outside=1), 18)
case('avgpool_bigpad', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[3, 3], pads=[2, 2, 2, 1]), 12)
case('maxpool_bigpad', 'MaxPool', [('X', P)], ['Y', 'I'], dict(kernel_shape=[3, 3], pads=[2, 2, 2, 1], strides=[2, 1]), 12)
case('avgpool_bigpad_incl', 'AveragePool', [('X', P)], ['Y'], dict(kernel_shape=[3, 3], pads=[2, 2, 2, 1], count_include_pad=1, ceil_mode=1, strides=[2, 2]), 12)
case('conv_bigpad', 'Conv', [('X', f32(1, 2, 4, 4)), ('W', f32(3, 2, 2, 2))], ['Y'], dict(pads=[3, 0, 2, 4]), 11)
case('convt_bigpad', 'ConvTranspose', [('X', f32(1, 2, 4, 4)), ('W', f32(2, 3, 3, 3))], ['Y'], dict(pads=[2, 0, 2, 1], strides=[2, 1]), 11)
case('bn_train14_nostats', 'BatchNormalization', [('X', B), ('s', f32(3)), ('b', f32(3)), ('m', f32(3)), ('v', np.abs(f32(3)))], ['Y'], dict(training_mode=1), 14, ref=True)  # onnxruntime runs no training mode
case('gap_5d', 'GlobalAveragePool', [('X', f32(1, 2, 3, 4, 5))], ['Y'], {}, 11)
case('gmp_3d', 'GlobalMaxPool', [('X', f32(2, 2, 3))], ['Y'], {}, 11)
case('maxpool_int8', 'MaxPool', [('X', (rng.integers(-128, 127, (1, 2, 5, 5))).astype(np.int8))], ['Y'], dict(kernel_shape=[2, 2], pads=[1, 1, 0, 0]), 12)
case('instnorm_f16', 'InstanceNormalization', [('X', f32(2, 3, 4, 5).astype(np.float16)), ('s', f32(3).astype(np.float16)), ('b', f32(3).astype(np.float16))], ['Y'], {}, 11)
# shapes and attribute sets common in exported models
case('bn9_2d', 'BatchNormalization', [('X', f32(4, 6)), ('s', f32(6)), ('b', f32(6)), ('m', f32(6)), ('v', np.abs(f32(6)))], ['Y'], {}, 9)
case('resize11_yolo', 'Resize', [('X', f32(1, 4, 5, 6)), ('roi', np.array([], np.float32)), ('scales', np.array([1, 1, 2, 2], np.float32))], ['Y'], dict(mode='nearest', coordinate_transformation_mode='asymmetric', nearest_mode='floor'), 11)
case('conv_depthwise_same', 'Conv', [('X', f32(1, 8, 15, 15)), ('W', f32(8, 1, 3, 3)), ('B', f32(8))], ['Y'], dict(group=8, strides=[2, 2], auto_pad='SAME_UPPER', kernel_shape=[3, 3]), 11)
case('maxpool_same_upper_s2', 'MaxPool', [('X', f32(1, 3, 15, 16))], ['Y'], dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad='SAME_UPPER'), 11)
case('avgpool_same_upper_s2', 'AveragePool', [('X', f32(1, 3, 15, 16))], ['Y'], dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad='SAME_UPPER'), 11)
case('d2s_dcr_subpixel', 'DepthToSpace', [('X', f32(1, 9, 4, 5))], ['Y'], dict(blocksize=3), 11)
case('deform_conv_groups_mask', 'DeformConv', [('X', f32(2, 4, 7, 6)), ('W', f32(6, 2, 3, 2)), ('off', f32(2, 2 * 2 * 6, 3, 5) * 1.5), ('B', f32(6)), ('mask', rng.random((2, 2 * 6, 3, 5)).astype(np.float32))], ['Y'], dict(group=2, offset_group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 0, 1]), 19)
case('rms_norm', 'RMSNormalization', [('X', f32(2, 3, 4, 5)), ('s', f32(4, 5))], ['Y'], dict(axis=2, epsilon=1e-3), 23, ref=True)  # onnxruntime has no RMSNormalization-23 kernel here
case('col2im_uncovered', 'Col2Im', [('X', f32(2, 3 * 6, 3 * 3)), ('img', np.array([8, 7], np.int64)), ('blk', np.array([2, 3], np.int64))], ['Y'], dict(strides=[3, 2], dilations=[2, 1], pads=[0, 1, 1, 0]), 18)
case('affine_grid_3d', 'AffineGrid', [('theta', f32(2, 3, 4)), ('size', np.array([2, 1, 3, 4, 5], np.int64))], ['Y'], dict(align_corners=0), 20)
case('affine_grid_2d_ac', 'AffineGrid', [('theta', f32(2, 2, 3)), ('size', np.array([2, 1, 1, 4], np.int64))], ['Y'], dict(align_corners=1), 20, ref=True)  # a size-1 axis with align_corners: onnxruntime puts it at +1, ONNX and torch at -1
case('max_roi_pool', 'MaxRoiPool', [('X', f32(2, 3, 9, 10)), ('rois', np.array([[0, 0, 0, 7, 5], [1, 2.4, 1.6, 9.5, 8.7], [1, -2, 3, 4, 30], [0, 5, 5, 5, 5]], np.float32))], ['Y'], dict(pooled_shape=[3, 2], spatial_scale=0.8), 11)
