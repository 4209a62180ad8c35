"""MONAI (Project-MONAI/MONAI#6033, https://github.com/Project-MONAI/MONAI/issues/6033): the maintainer's
repro runs monai.inferers.sliding_window_inference on an input that requires grad and calls
result.sum().backward(); it fails with "RuntimeError: element 0 of tensors does not require grad and does not
have a grad_fn", so nothing upstream of the sliding window (the input, a network producing it) gets a gradient.
Why: after stitching the windows, sliding_window_inference ran output_image_list[ss] = output_image_list[ss].detach()
(monai/inferers/utils.py#L265 at 88fb0b1), which cut every output from the graph.
Fix (PR #6034): drop the .detach(); callers who want no gradient wrap the call in torch.no_grad() themselves."""
import torch


# --- monai.inferers.utils (v1.1 at 88fb0b1), cut down: constant importance map, no padding, 2D/3D spatial ---
def _get_scan_interval(image_size, roi_size, num_spatial_dims, overlap):
    scan_interval = []
    for i in range(num_spatial_dims):
        if roi_size[i] == image_size[i]:
            scan_interval.append(int(roi_size[i]))
        else:
            interval = int(roi_size[i] * (1 - overlap))
            scan_interval.append(interval if interval > 0 else 1)
    return tuple(scan_interval)


def dense_patch_slices(image_size, patch_size, scan_interval):
    starts = []
    for dim in range(len(image_size)):
        s = list(range(0, image_size[dim] - patch_size[dim] + 1, scan_interval[dim]))
        if s[-1] + patch_size[dim] < image_size[dim]:
            s.append(image_size[dim] - patch_size[dim])
        starts.append(s)
    grid = torch.cartesian_prod(*[torch.tensor(s) for s in starts]).reshape(-1, len(image_size)).tolist()
    return [tuple(slice(st, st + patch_size[d]) for d, st in enumerate(start)) for start in grid]


def sliding_window_inference(inputs, roi_size, sw_batch_size, predictor, overlap=0.25):
    num_spatial_dims = len(inputs.shape) - 2
    batch_size, _, *image_size = inputs.shape
    scan_interval = _get_scan_interval(image_size, roi_size, num_spatial_dims, overlap)
    slices = dense_patch_slices(image_size, roi_size, scan_interval)
    num_win = len(slices)
    total_slices = num_win * batch_size
    importance_map = torch.ones(roi_size, dtype=inputs.dtype)
    output_image_list, count_map_list = [], []
    for slice_g in range(0, total_slices, sw_batch_size):
        slice_range = range(slice_g, min(slice_g + sw_batch_size, total_slices))
        unravel_slice = [
            [slice(int(idx / num_win), int(idx / num_win) + 1), slice(None)] + list(slices[idx % num_win])
            for idx in slice_range
        ]
        window_data = torch.cat([inputs[win_slice] for win_slice in unravel_slice])
        seg_prob = predictor(window_data)  # batched patch segmentation
        if not output_image_list:
            output_shape = [batch_size, seg_prob.shape[1]] + list(image_size)
            output_image_list.append(torch.zeros(output_shape, dtype=inputs.dtype))
            count_map_list.append(torch.zeros([1, 1] + output_shape[2:], dtype=inputs.dtype))
        for idx, original_idx in zip(slice_range, unravel_slice):
            output_image_list[0][original_idx] += importance_map * seg_prob[idx - slice_g]
            count_map_list[0][original_idx] += importance_map
    # account for any overlapping sections
    for ss in range(len(output_image_list)):
        output_image_list[ss] = output_image_list[ss]
        _map = count_map_list.pop(0)
        for _i in range(output_image_list[ss].shape[1]):
            output_image_list[ss][:, _i : _i + 1, ...] /= _map
    return output_image_list[0]


# --- the report's repro ---
torch.manual_seed(0)
inputs = torch.ones((3, 16, 15, 7), requires_grad=True)
result = sliding_window_inference(inputs, roi_size=(2, 3), sw_batch_size=3, predictor=lambda x: x + 1.0)
result.sum().backward()
print(inputs.grad)
print("inputs got a gradient:", inputs.grad is not None and bool(inputs.grad.abs().sum() > 0))
