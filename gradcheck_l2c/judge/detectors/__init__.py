"""Detectors, one module each, registered here in the order findings are listed.

A cut detector words one kind of gradient cut (``describe``); a scanner looks at the whole trace
once it ends (``scan``). Adding a detector is one file plus one line below.
"""
from gradcheck_l2c.judge.detectors import (
    autograd_error,
    cut_term,
    data_attr,
    dead_units,
    ddp_unused,
    detach,
    exploding_gradient,
    grad_no_graph,
    inplace_saved,
    item,
    module_in_forward,
    module_requires_grad,
    new_parameter,
    no_grad,
    no_update,
    non_differentiable,
    non_finite,
    non_leaf_watched,
    non_parameter_tensor,
    numpy_,
    optimizer,
    state_dict_alias,
    state_dict_reload,
    tensor_rewrap,
    untraced_process,
    untraced_thread,
    unused_parameter,
    vanishing_gradient,
)

CUTS = {
    module.KIND: module
    for module in (item, numpy_, tensor_rewrap, detach, data_attr, no_grad, state_dict_reload, new_parameter,
                   non_differentiable, grad_no_graph)
}
SCANNERS = (ddp_unused, unused_parameter, non_leaf_watched, non_parameter_tensor, module_in_forward,
            module_requires_grad, inplace_saved, autograd_error, state_dict_alias, optimizer, untraced_thread,
            untraced_process, cut_term, no_update, new_parameter, non_finite, vanishing_gradient, exploding_gradient,
            dead_units)
