"""The corpus in tests/cases/: small scripts with the shape of real public bug reports, each with a
fixed twin. Every bug must be named by kind, severity and the exact line to change (and the related
lines where the symptom showed); every fixed twin must stay free of errors and warnings.

Scripts run the way the CLI runs them (a fresh ``__main__`` that is gone before judging), unless the
case says otherwise: ``pretrace`` builds its objects before the trace starts (a pytest fixture, an
earlier notebook cell) and traces only ``step``; ``plain`` runs without a trace (the script calls the
assertions itself).
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from gradcheck_l2c.present.jsonreport import json_document
from gradcheck_l2c.rules import rule_for
from gradcheck_l2c.runner import ScriptRunner, run_script
from gradcheck_l2c.tracer import trace

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"
CASES: list[dict[str, Any]] = json.loads((CASES_DIR / "expected.json").read_text())

#: Cases the tool does not explain yet, with why; strict, so fixing one makes its xfail fail.
KNOWN_MISSES: dict[str, str] = {
    # Batch 4, first pass (tests/cases/README.md): what the tool said instead.
    "b4_quant_scale_replaced":
        "optimizer warning at the optimizer line 26 (defined 15) and unused_parameter error at 12, not the "
        "replacing line 15",
    "b4_gate_params_frozen":
        "says all 2 watched tensors got a gradient: Parameters made with requires_grad=False are not watched;"
        " left: Parameters made with requires_grad=False and given to the optimizer are also constants on "
        "purpose (frozen sin-cos position embeddings)",
    "b4_fgsm_output_non_leaf":
        "non_leaf_watched error at line 13 (the clamp that made it), not at the return on 15 where the fix "
        "goes",
    "b4_fedprox_shallow_global_params":
        "says all 4 watched tensors got a gradient: the list(model.parameters()) snapshot aliasing live "
        "weights is not reported",
    # Batch 5, first pass (tests/cases/README.md): what the tool said instead.
    "b5_hier_dependence_loss_argmax":
        "cut_term warnings at the argmax lines 38/39, not at the torch.where indicator on 41 that the fix "
        "replaces",
    "b5_reinforce_resampled_log_probs":
        "autograd_error at the select_action call 53 (where the log-prob was made), not at the "
        "memory.extend on 59 that keeps it across updates",
    "b5_opennre_att_weight_data":
        "says all 5 watched tensors got a gradient: the attention path cut by fc.weight.data is not reported",
    # Batch 6, first pass on 5fbed71 (tests/cases/README.md): what the tool said at the expected line's place.
    "b6_semgan_r1_disc_img_frozen":
        "first pass: nothing; left: an optimizer whose parameters are all switched off at one of its steps, "
        "after they learned: a void step seen in this report only, and the switch runs in a helper shared "
        "with deliberate GAN freezes",
    "b6_art_shadow_clone_stale_optimizer":
        "first pass: optimizer w :41",
    "b6_skorch_deepcopy_unlinks_optimizer":
        "first pass: optimizer w :28; unused_parameter w :60",
    "b6_fedlora_classifier_frozen":
        "first pass: nothing; left: a head frozen by a requires_grad pass and left out of the filtered "
        "optimizer looks at run time like a deliberately frozen pretrained head (causal-LM LoRA)",
    "b6_gdpp_loss_after_freed_graph":
        "first pass: autograd_error e :33",
    "b6_maml_single_update_step_no_grad":
        "first pass: autograd_error e :48; cut_term w :32; no_grad e :36",
    "b6_stylemapgan_w_rec_second_backward":
        "first pass: autograd_error e :55; unused_parameter w :20",
    "b6_augmented_lstm_state_data_clone":
        "first pass: nothing",
    "b6_dpt_fusion_layer0_unused":
        "first pass: unused_parameter e :13; unused_parameter e :14",
    "b6_kws_l2_nontrainable_module":
        "first pass: no_grad e :13",
    "b6_rqvae_utilization_loss_bincount":
        "first pass: cut_term w :18",
    # Batch 7, first pass on dd47205 (tests/cases/README.md).
    "b7_suave_assignment_argmax_onehot":
        "first pass: nothing",
    "b7_olaf_vqlam_codebook_loss_straight_through":
        "first pass: detach e :18",
    "b7_lora_mark_only_after_freeze":
        "first pass: nothing; left: adapters frozen and left out of the filtered optimizer look at run time "
        "like linear probing of a frozen backbone",
    "b7_fedscope_client_model_replaced":
        "first pass: nothing",
    "b7_verl_actor_warmup_lr_zero":
        "first pass: nothing",
    "b7_mas_freeze_layers_inverted":
        "first pass: nothing; left: frozen layers held by the optimizer downstream of trained ones also occur"
        " on purpose (LoRA base weights with the optimizer given all parameters)",
    "b7_ppo_max_grad_norm_zero":
        "first pass: no_update w :38",
    "b7_wae_gan_backward_one_shape":
        "first pass: autograd_error e :24",
    "b7_peft_adapter_loaded_not_trainable":
        "first pass: detach e :32; state_dict_reload e :24",
    "b7_monai_attention_proj_unused":
        "a hit at the line (the README counts it), but unused_parameter is an error here where the case says warning",
    # Batch 8, first pass on fe6bce2 (tests/cases/README.md).
    "b8_compressive_aux_loss_detached":
        "first pass: a hit at the line (the README counts it), of another kind or severity: cut_term w :19; detach e :20",
    "b8_bert_summ_refine_under_no_grad":
        "first pass: a hit at the line (the README counts it), of another kind or severity: cut_term w :23; no_grad e :17",
    "b8_hf_warmup_schedule_stepped_per_epoch":
        "first pass: no_update w :11",
    "b8_twitter_mlp_layers_python_list":
        "first pass: a hit at the line (the README counts it), of another kind or severity: non_parameter_tensor w :15",
    "b8_sfmlearner_scheduler_instead_of_step":
        "first pass: no_update w :20; optimizer w :16",
    "b8_maml_inner_update_param_data":
        "first pass: optimizer w :11; unused_parameter e :10; unused_parameter w :10",
    "b8_sasa_rel_params_made_in_forward":
        "first pass: a hit at the line (the README counts it), of another kind or severity: module_in_forward e :18; optimizer w :18; optimizer w :19",
    "b8_convlstm_peephole_plain_tensors":
        "a hit at the line of the expected kind (the README counts it), but a warning where the case says error",
    "b8_snli_hidden_layers_python_list":
        "a hit at the line after batch 8's first pass, as non_parameter_tensor where the case says optimizer",
    "b8_texar_merge_layer_list":
        "a hit at the line after batch 8's first pass, as non_parameter_tensor where the case says optimizer",
    # Batch 9, first pass on e2c818f (tests/cases/README.md).
    "b9_usb_meanteacher_strong_logits_typo":
        "first pass: nothing; left: the line to change binds a name to the teacher's output: no operation runs there",
    "b9_papo_aug_entropy_from_no_grad_logprobs":
        "first pass: cut_term w :15",
    "b9_lth_grad_mask_freezes_negative_weights":
        "first pass: nothing; left: elements whose gradient a mask zeroes before each step are pruning on "
        "purpose in the twin; the mask's line (np.where) runs outside torch",
    "b9_tsan_out_alias_inplace":
        "first pass: inplace_saved e :19",
    "b9_snntorch_membrane_not_reset":
        "first pass: autograd_error e :44",
    "b9_gan_geometry_grad_of_vector":
        "first pass: autograd_error e :16",
    "b9_ddpm_self_condition_inference_mode":
        "first pass: autograd_error e :21",
    "b9_recbole_frozen_pretrained_embeddings":
        "first pass: autograd_error e :29",
    "b9_lightning_test_step_inference_mode":
        "first pass: autograd_error e :31",
    # Batch 10, first pass on c1ffb17 (tests/cases/README.md).
    "b10_rqvae_codebook_loss_on_straight_through":
        "first pass: detach e :19; left: the line where the straight-through value enters the loss "
        "(b7_olaf_vqlam_codebook_loss_straight_through waits for the same fact)",
    "b10_detectron2_box_head_unfrozen_after_optimizer":
        "first pass: optimizer w :30; left: the same shape as b4_unfreeze_stale_optimizer (frozen, optimizer built "
        "from the parameters that require grad, unfrozen later), whose expected line is the optimizer's (:24), "
        "not the line the add_param_group follows: the two conventions conflict",
    "b10_deblurgan_wgan_gp_critic_fake_not_detached":
        "first pass: autograd_error e :48; no_update w :39; left: a graph value stored on an object (:48) and "
        "used by a later backward: b7_shiftnet_ragan_pred_real_reused, of the same shape, expects the storing line",
    "b10_argmax_predictions_given_to_loss":
        "first pass: non_differentiable e :23; left: the line where the cut value enters the loss, not the "
        "cut (b5_hier_dependence_loss_argmax waits for the same fact)",
    "b10_monodepth2_backprop_validation_under_no_grad":
        "first pass: autograd_error e :43; left: the loss is made under no_grad from parameters that already got "
        "gradients, whose cuts are no longer carried (for speed)",
    "b10_derivative_model_validation_grad_disabled":
        "first pass: no_grad e :51; non_differentiable w :17; left: :51, the call under the "
        "set_grad_enabled(False) block, is the line b5_pgd_eval_under_no_grad and monodepth2 choose",
    "b10_slot_attention_init_registered_as_buffers":
        "first pass: nothing; left: a buffer filled by nn.init and used in forward is the only report of a weight "
        "registered as a buffer, and register_buffer is how fixed random matrices (random Fourier features) are "
        "kept on purpose",
    # Batch 11, first pass on b7df41e (tests/cases/README.md).
    "b11_coqui_bwe_generator_loss_overwritten":
        "first pass: nothing",
    "b11_ageprogression_tv_reg_loss_times_zero":
        "first pass: nothing",
    "b11_opacus_validator_fix_after_optimizer":
        "first pass: optimizer w :24; unused_parameter w :22; left: fresh layers (GroupNorm for BatchNorm2d) put "
        "into the model by a call after the optimizer are named at the optimizer, as b4_prune_speedup_after_optimizer"
        " (:31), b4_resize_embeddings_after_optimizer (:28) and b6_t5_adapter_added_after_optimizer (:57) expect: "
        "the two conventions conflict",
    "b11_art_pgd_generate_under_no_grad":
        "first pass: no_grad e :39; left: :39, the call under the `with torch.no_grad():` block, is the line "
        "b5_pgd_eval_under_no_grad, b8_bert_summ_refine_under_no_grad and b9_cyclegan_perceptual_loss_no_grad choose; "
        "this case names the `with` line (:38)",
    "b11_yolov5_adv_val_enable_grad_in_inference_mode":
        "first pass: nothing (the trace itself raised 'Inference tensors do not track version counter' at :20, "
        "fixed); now autograd_error e :24; left: inference mode is turned on by a user function that returns "
        "torch.inference_mode() (:12), used as a decorator (:29): the run does not record where inference mode was "
        "entered, and b7_refnerf_normals_under_inference_mode names the computation under the block, not the block",
    "b11_dgl_gated_graph_conv_absent_edge_types":
        "first pass: unused_parameter e :14; left: unused layers are named where the layer's own __init__ makes "
        "them (:14, the ModuleList), as b7_monai_attention_proj_unused and b6_dpt_fusion_layer0_unused expect, not "
        "at the caller that chose their count (n_etypes=8); with dgl's GatedGraphConv in the library, that caller "
        "is already the first user line",
    "b11_function_backward_autograd_grad_without_graph":
        "first pass: non_differentiable e :42; non_parameter_tensor w :30; left: the ops of a custom Function's "
        "backward run while the trace's torch-function mode is handling the backward() call, so the trace does not "
        "see the recomputation without graph at :20 (one report of it so far)",
    # Batch 12, first pass on d8f27a4 / 89d9fe6 / d686755 (tests/cases/README.md): what the tool said instead.
    "b12_mixtral_balancing_loss_softmax_over_topk":
        "first pass: nothing; left: the term's gradient on the router is about 1e-8, not zero: no cut and no constant",
    "b12_hyperiqa_hypernet_params_filter_exhausted":
        "first pass: nothing; left: an exhausted filter() given to the optimizer rebuilt after each epoch leaves an "
        "empty group; the old optimizer held the parameters, and where the filter was made is not recorded",
    "b12_torchflows_fit_on_autoencoder_latent":
        "first pass: autograd_error e :44; left: the latent codes are made after the first iteration, whose lines "
        "alone are recorded for autograd's errors (for speed)",
    "b12_higher_innerloop_copies_initial_weights":
        "first pass: detach e :16; left: the .detach() sits in the script's stand-in for higher's innerloop_ctx, user "
        "code here; the case names the call into it",
    "b12_labml_distillation_soft_loss_on_teacher_logits":
        "first pass: nothing; left: a loss term computed only from a frozen teacher's outputs carries no gradient and no "
        "cut: a constant added to the loss",
    "b12_transfer_nlp_finetune_last_layer_after_optimizer":
        "first pass: optimizer w :24; left: a new head put in after the optimizer is named at the optimizer (batches 4 "
        "and 10, test_optimizer_lists.py); the case names the new head",
    "b12_bert_warmup_linear_lr_at_total_steps":
        "first pass: no_update w :40; left: the learning rate 0 is written by hand into param_groups from Python "
        "numbers: the step is named, not the line that computed the rate",
    "b12_psenet_lightning_training_step_calls_backward":
        "first pass: autograd_error e :35; left: the script's stand-in for Lightning's loop is user code, so its "
        "backward is named; the case names the backward added to training_step",
    # Batch 13, first pass on 4993aac / dc73157 (tests/cases/README.md): what the tool said instead.
    "b13_discuss_meta_pseudo_label_student_step_cuts_teacher":
        "first pass: nothing; left: the teacher's term reaches the student only through the student's own optimizer "
        "step (in place, without graph): a cut by a step, which no cut event records",
    "b13_pytroubles_gan_extra_generator_steps_freed_fake":
        "first pass: autograd_error e :35; left: the fake is made after the first iteration, whose lines alone are "
        "recorded for autograd's errors, so the refused backward is named",
    "b13_avalanche_ewc_penalty_on_saved_slice":
        "first pass: nothing; left: the penalty is exactly 0 and without gradient, computed from the detached "
        "anchors alone; its only cut is the anchors' correct .detach(), not the line that sliced the wrong tensor",
    "b13_graph_unet_gpool_topk_without_gate":
        "first pass: non_differentiable e :31; left: the top-k whose indices carry no gradient is named; the case "
        "names the gather where the gate's scores must multiply in",
    "b13_velog_zero_grad_between_backward_and_step":
        "a hit at the line of the expected kind (the README counts it), an error where the case says warning: "
        "erased gradients are an error in b5_byol_zero_grad_before_step and b7_dreambooth_lora_zero_grad_after_backward",
    # Batch 14, first pass on 017a301 and 9f22253, which record the same (tests/cases/README.md): what the tool said instead.
    "b14_byola_set_trainable_skips_frozen_params":
        "first pass: nothing; parameters frozen before the trace saw them (requires_grad=False) are not watched",
    "b14_openhelix_new_token_rows_requires_grad_on_slice":
        "first pass: nothing; requires_grad set on a slice (a temporary) leaves the frozen embedding unwatched",
    "b14_edsnlp_ner_update_labels_rebinds_linear":
        "first pass: optimizer w :48 (the optimizer built before the swap) and unused_parameter w :16; the case "
        "names the line that swapped the new Linear's parameters into the module",
    "b14_pilot_dualprompt_param_groups_generator":
        "first pass: nothing; a param group whose 'params' is a generator, used up by the first zero_grad(), steps "
        "no tensor from then on",
    # Batch 15, first pass on 46755f8 (tests/cases/README.md): what the tool said instead.
    "b15a_i2dloc_bpnp_loss_int_flow":
        "first pass: nothing; the flow goes through .int() and Python ints into a tensor written element by element "
        "before NumPy (no taint reaches the array .numpy() makes), and requires_grad set on the rebuilt points makes "
        "leaves that do get a gradient",
    "b15b_sbi_retrain_from_scratch_stale_optimizer":
        "a hit at the line of the expected kind (the README counts it), a warning where the case says error: a "
        "parameter in no optimizer is a warning in every other case",
    "b15b_nnue_get_layers_skips_batchnorm":
        "optimizer warnings at the param group's line (:52); the case names the isinstance filter of the generator "
        "the group was built from (:66)",
    "b15b_relational_aggregators_params_in_dicts":
        "non_parameter_tensor at :19, where the nested dicts of Parameters are made (the rule for nested "
        "containers); the case names the attribute's `= {}` (:16)",
    "b15c_saunet_dual_att_block_returns_fused":
        "unused_parameter at the unused branch's construction (:63, as b14_hysupp_misicnet_layer2_unused); the case "
        "names the return that drops the branch's output (:55)",
    "b15c_mrcl_oml_inner_grad_without_create_graph":
        "first pass: nothing; now cut_term warnings at :40 (b5_maml_grad_without_create_graph's kind for a first-"
        "order inner step), where the case says grad_no_graph error",
    # Batch 16, first pass (on 63f1985).
    "b16a_pytorch_word2vec_numpy_sum_cuts_u_embeddings":
        "a hit at the line (the README counts it), of another kind: numpy error at :30, whose `.data.numpy()` the "
        "tool words as one exit to NumPy, where the case says data_attr",
    "b16a_diagdistill_motion_loss_from_no_grad":
        "first pass: cut_term w :28, the first line of the no_grad block (the noise added to the latent; named as "
        "`randn_like` then, as `add` now), where the case names the motion-loss line :35 that uses the block's output",
    "b16a_torchmetrics_average_precision_as_loss":
        "first pass: non_differentiable e :20, the argsort inside the script's stand-in for torchmetrics (user code "
        "here); the case names the call into it (:40), as b12_higher_innerloop_copies_initial_weights",
    "b16c_mmaction2_tpn_aux_loss_discarded":
        "first pass: unused_parameter e :32 (where aux_head is built, the tool's line for an unused layer), where "
        "the case names the call whose second result, the aux loss, is thrown away (:53)",
    "b16c_simple_cyclegan_fake_not_detached_for_d":
        "first pass: inplace_saved e :42 (optimizer_g.step() between the two backwards, the other valid fix) and "
        "no_update w :20 (optimizer_d never stepped: the script raised before it; not said now); the case names "
        "the discriminator's use of fake_y without .detach() (:46)",
    # Batch 17, first pass (on b38976a).
    "b17b_functorch_make_functional_params_are_copies":
        "first pass: item e :37 and :49, the two loss prints (now unused_parameter e :34, the model's line), for the "
        "model whose own weights never enter a loss; the backwards run on the deep copy the script's stand-in for "
        "functorch's make_functional made (:38)",
    "b17c_cog_predict_inference_mode_decorator":
        "first pass: no_grad e :26 with the decorator (:22) as `disabled` and in the fix (the tool's line for a "
        "function's own decorator); the trace also broke the script's backward (fixed since)",
    "b17c_farm_t_total_rounding_lr_zero":
        "first pass: no_update w :36 at the LambdaLR whose rate reaches 0 two steps early; the case names the "
        "int() that rounds the schedule's length down (:19)",
    "b17c_darts_repackage_hidden_not_detached":
        "first pass: autograd_error e :49, where the carried hidden state re-enters the model; the case names the "
        "`return h` of the repackage_hidden that was meant to detach it (:21)",
    # Batch 18, first pass (on 7ff1baa).
    "b18a_transformers_checkpoint_reentrant_lora":
        "first pass: no_grad e :59, the reentrant checkpoint call whose inputs need no gradient; the case names the "
        "training arguments (:93) that set use_reentrant, a configuration the run cannot tie to the call",
    "b18a_softmax_splatting_saved_input_modified_inplace":
        "first pass: inplace_saved e :52, the ReLU(inplace=True) that overwrote the saved input (the other valid "
        "fix); the case names the save_for_backward that the report's .clone() went into (:34)",
    "b18a_pytorch_optimization_inside_function_forward":
        "first pass: autograd_error e :31 ('no cut the trace saw explains why'); now autograd_error e :30, the loss "
        "line inside the Function's forward, told as made with gradients off there; the case expects no_grad",
    "b18a_esm_vqvae_decoder_takes_indices":
        "first pass: nothing; the reconstruction term reaches the encoder only through argmin's indices, which "
        "pseudo-labelling does on purpose, and the encoder learns from the commitment term",
    "b18b_litgpt_warmup_lambda_stepped_per_epoch":
        "first pass: no_update w :25, the LambdaLR whose rate is 0 at every step; the case names the scheduler "
        "config's interval one line below (:26)",
    "b18b_openpcdet_nonleaf_parameter_left_out_of_onecycle":
        "first pass: optimizer w :42, the list of the leaf modules' parameters (where the parameter was made, :23, "
        "as related); the case names the parameter, wrapped in a module by the report's fix",
    "b18b_vitpose_layer_decay_applied_every_step":
        "first pass: nothing; the rate falls geometrically to 1e-28, never to 0, written into param_groups by user "
        "code the run does not see (:22)",
    "b18b_megatron_finetune_load_after_main_params_copied":
        "first pass: nothing; the optimizer steps float32 copies that a later load overwrites under no_grad",
    # Batch 19, first pass: 6 of 14 (tests/cases/README.md).
    "b19a_fedshare_fedprox_data_proximal_term":
        "first pass: nothing; left: the proximal term starts after the first epoch, once the weights' gradients "
        "arrived: .data of a weight whose gradient arrived records no cut (a soft update or a log of it each step)",
    "b19b_pyg_gatconv_att_r_never_used":
        "first pass: unused_parameter e :37, where att_r is made (the corpus's line for an unused parameter); the "
        "case names the line that uses att_l in its place",
    "b19d_nanodet_zero_loss_constant_no_grad":
        "first pass: autograd_error e :73, the backward of a loss of three torch.tensor(0) constants made in a "
        "branch: values without history carry no line to the loss",
    "b19f_genrl_a2c_cnn_feature_not_in_optimizer":
        "first pass: optimizer w :74, the policy's optimizer; the shared CNN is in neither, and the case names "
        "the value optimizer's line (the project's fix changed both)",
    # Batch 20, first pass: 8 of 16 (tests/cases/README.md).
    "b20c_llava_clip_vision_tower_no_grad_forward":
        "first pass: no_grad e :53, the first op under the forward's @torch.no_grad() (b13_bunny's line for the same "
        "vision tower); the case names the decorator",
    "b20c_moco_queue_without_clone_enqueued_inplace":
        "first pass: inplace_saved e :56, the enqueue's write (family 3's line); the case names the einsum where the "
        "maintainer's .clone() goes",
    "b20e_peft_mamba2_lora_out_proj_bypassed":
        "first pass: unused_parameter e :93, the LoRA layer the fused kernel never calls; the case names "
        "target_modules in the configuration",
    "b20e_trl_grpo_old_logps_inference_mode":
        "first pass: autograd_error e :56, the op that saved a weight whose values a ZeRO-3-like gather replaced "
        "under inference_mode (p.data = ...); the case names the inference_mode block",
    "b20e_peft_qlora_seq_cls_pre_classifier_quantized":
        "first pass: nothing (requires_grad_()'s wording of the refusal was unknown); now autograd_error e :106, the "
        "requires_grad_(True) on the quantized layer; the case names the quantization configuration",
    "b20f_mae_dfer_messenger_token_view_overwritten":
        "first pass: inplace_saved e :69, the write (family 3's line); the case names the read where the fix's "
        ".clone() goes",
    # Batch 21, first pass: 8 of 17 (tests/cases/README.md).
    "b21b_renet_attn_aggregator_output_dropped":
        "first pass: non_differentiable e :47, the softmax over groups of one element (true of those groups); the "
        "attention's output is never used (the zeros line the case names carries no operation on it)",
    "b21b_deformable_pvrcnn_offset_grouping_no_grad":
        "first pass: detach e :19, inside the ball query's stand-in, whose detached distances only pick indices; the "
        "grouping under no_grad that the case names comes later in the flow",
    "b21c_monai_ssimloss_metric_call_detaches":
        "first pass: detach e :17, in the metric's __call__ (the stand-in of MONAI's code); the case names the call "
        "the fix replaced",
    "b21c_monai_warp_nearest_blocks_ddf_grad":
        "first pass: nothing; grid_sample's nearest mode gives the grid an exactly zero gradient, which the trace "
        "does not know",
    "b21d_smoothinv_diffusion_denoise_no_grad":
        "first pass: no_grad e :101, the first op in the with block (the corpus's line); the case names the with",
    "b21e_pytorch_custom_function_output_scaled_inplace":
        "first pass: autograd_error e :21, the Function's `return x` (clone it, the other valid fix); the case names "
        "the in-place write",
    "b21f_alphappimi_optimizer_feature_only_classifier":
        "first pass: optimizer w :144, the last of two optimizers that leave the feature extractor out; the case "
        "names the first",
    "b21f_ltir_optimizer_step_before_adv_backward":
        "first pass: optimizer w :75, the step before the adversarial backward, at the case's line under another "
        "kind (the case says cut_term)",
    "b18c_attention_is_all_you_need_position_enc_left_out_of_optimizer":
        "first pass: optimizer w :39, the filter that leaves the table out of the trainable parameters; the case "
        "names the optimizer (:47)",
    "b18c_transformers_generate_no_grad_in_training":
        "first pass: no_grad e :30, the first op under generate's @torch.no_grad() (the tool's line for a "
        "function's own decorator, as b17c_cog); the case names the call of generate in training (:41)",
    # Batch 23, first pass: 6 of 16 (tests/cases/README.md).
    "b23b_sentence_transformers_encode_no_grad":
        "first pass: no_grad e :51, the first op under the `with torch.no_grad():` of the stand-in's encode(); the case "
        "names the user's call of encode (:68), which the fix replaced",
    "b23c_pytorch3d_light_params_rewrapped":
        "first pass: tensor_rewrap e :21, the torch.tensor(...) inside the stand-in's format_tensor; the case names the "
        "user's PointLights(...) call (:74)",
    "b23c_ultralytics_predict_inference_mode_conf_loss":
        "first pass: no_grad e :33, the first op under the stand-in predictor's @smart_inference_mode(); the case names "
        "the user's call of the model (:99)",
    "b23c_nerfstudio_depth_nerfacto_median_depth_supervision":
        "first pass: cut_term w :107, the median depth made under the stand-in's no_grad; the case names the line that "
        "picks outputs['depth'] for the loss (:143), which the fix changed to the expected depth",
    "b23d_deepxde_neumannbc_cached_variable":
        "first pass: autograd_error e :83, the backward (the value's line unknown: the first iteration's recording "
        "stopped at a PINN's autograd.grad); now autograd_error e :79, the call in the loop, with the lambda's line "
        "(:103) in the message; the case names the lambda, whose value a cache outside the loop's frame keeps",
    # Batch 24, first pass: 6 of 11 here, 7 of 15 with the ecosystem's four (tests/cases/README.md).
    "b24a_ltw_fnet_weights_left_out_of_inner_loss":
        "first pass: no_grad e :127, the weighting net's only call that reaches the final loss runs under the no_grad "
        "at :126; the case names the inner loss (:110) that leaves the net's output f_lambda_norm (:108) out",
    # Batch 25, first pass: 13 of 15 here, 13 of 17 with the ecosystem's two (tests/cases/README.md).
    "b25a_dirac_brats_occlusion_mask_loss_comparison":
        "first pass: cut_term w :132, the `>` comparison that cuts the occlusion term; the case names the term's line "
        "(:146), which the author's fix rewrote as a hinge",
    # Batch 26, first pass: 13 of 17 (tests/cases/README.md).
    "b26a_gan_loss_nonsaturating_generator_step_inplace":
        "first pass: inplace_saved e :65, the generator's step() that updated weights the discriminator's loss saved; "
        "the case names the fake term (:47) whose .detach() was the article's fix",
    "b26a_gan_lossg_reuses_d_output_after_optimd_step":
        "first pass: inplace_saved e :32, optimD.step() before lossG's backward through the same D output; the case "
        "names the line after it (:33) where the post recomputes D(g) (moving the step is the other fix)",
    "b26e_embedding_max_norm_weight_before_lookup":
        "first pass: autograd_error e :32, the backward: F.embedding's max_norm renormalises the weight in place under "
        "no_grad, a write the trace does not keep; the case names the matmul that used the weight before it (:27)",
    # Batch 27, first pass: 5 of 12 (tests/cases/README.md).
    "b27c_lightning_pinn_validation_set_grad_enabled":
        "first pass: autograd_error e :29, the validation call the script's stand-in Trainer runs under "
        "inference_mode (its fix: no_grad there); the case names Trainer(...) (:65), whose inference_mode=True the "
        "report's fix turns off: in a Trainer of the user's own the line inside it is as good a place",
    "b27c_optuna_gpsampler_kernel_fit_under_no_grad":
        "first pass: no_grad e :69, the call made inside the caller's no_grad block (the rule for a backward run by "
        "a helper called from an evaluation loop); the case names the loss line in the fitting function (:41), where "
        "Optuna's fix added enable_grad()",
    "b27e_nvdiffmodeling_xfm_points_matrix_no_grad":
        "first pass: non_differentiable e :68 blaming ViewBackward0, the op that took the parameter; now :29, the "
        "return of the user's Function whose backward gives None for the matrix made from it; the case names the "
        "call (:53) that the maintainers' fix sent to the differentiable path (use_python=True)",
    "b27e_student_splatting_nu_degree_not_rasterized":
        "first pass: unused_parameter e :45 at the parameter, saying a forward does not use it; left: the value "
        "computed from it is passed to the rasterizer's forward as an argument that forward never reads, and the "
        "case names the call inside that forward (:35) that passes a default instead",
    # Batch 28, first pass: 11 of 16 (tests/cases/README.md).
    "b28a_dpr_resume_scheduler_shift_lr_zero":
        "first pass: no_update w :24, the schedule's lambda whose max(0, ...) gives a rate of 0 past the resumed "
        "run's shifted total; the case names the config flag (:17) that made the resume restore the old schedule",
    "b28a_yolo_ema_restore_copies_into_shadow":
        "first pass: nothing; left: the EMA's apply_shadow() writes the never-updated shadow into .data at every "
        "checkpoint and restore() copies the wrong way, so training is wiped each epoch; the trace does not see "
        "writes into .data as reloads, nor compare a parameter's last values with its first",
    "b28c_vmap_ensemble_grad_wrt_weight_slice":
        "first pass: nothing; left: autograd.grad(..., allow_unused=True) gives None for a slice of the stacked "
        "weights made after the forward, and the penalty built from those None is a constant 0",
    "b28f_minimind_moe_top1_norm_topk_prob":
        "first pass: nothing; left: with one expert a token, topk_weight / topk_weight.sum(-1) is x / x, a constant "
        "whose gradient is rounding residue (5e-9), not zero; the trace checks softmax-like normalisations over one "
        "element, not a division by its own sum",
    # Batch 29, first pass on 2f2ed12 (tests/cases/README.md): what the tool says instead.
    "b29b_vqpytorch_learnable_codebook_commit_detached":
        "first pass: detach e :37, the straight-through x + (q - x).detach() that cuts the codebook (as b7_olaf and "
        "b10_rqvae); the case names the commitment loss's detach of the straight-through value (:40)",
    "b29c_abcnn_ecg_attention_weight_never_applied":
        "first pass: unused_parameter e :35, where the weight is made (the corpus's line for an unused parameter); "
        "the case names the forward line where the author says it should multiply the input (:38)",
    "b29d_googlenet_aux_logits_left_out_of_loss":
        "first pass: unused_parameter at the model's line (:16) for every auxiliary classifier's parameter; the "
        "case names the loss that leaves the auxiliary outputs out (:26): outputs of a library model are not terms",
    "b29d_siamcar_down_layer_not_in_optimizer":
        "first pass: optimizer w :99, the last group added to the list given to the optimizer, which leaves `down` "
        "out; the case names the optimizer's call one line below (:100)",
    "b29e_llava15_adv_image_vision_tower_no_grad":
        "first pass: no_grad e :37, the call into the @torch.no_grad() forward handed the tensor to optimise (the "
        "rule since batch 14 for a pipeline given it); the case names the first line inside that forward (:24)",
    "b29f_tistory_gan_d_backward_frees_g_graph":
        "first pass: autograd_error e :31, where the fake that both backwards share was made (`.detach()` it for "
        "the discriminator: the rule's fix); the case names the discriminator's backward, whose fix in the post "
        "is retain_graph=True (:36)",
    # Batch 30, first pass on f57c74a (tests/cases/README.md): what the tool says instead.
    "b30b_libcity_gts_learned_adj_not_fed":
        "first pass: non_differentiable e :20 and detach e :21, the hard Gumbel-softmax's argmax and straight-through "
        "detach inside the graph learner; the case names the encoder call that is given the prior adjacency instead "
        "of the learned one (:73)",
    "b30b_pyg_gumbel_adj_dense_to_sparse_values_dropped":
        "first pass: non_differentiable e :16, the nonzero() inside the dense_to_sparse stand-in; the case names "
        "the conv call that leaves the edge values out (:61)",
    "b30c_styletts2_slm_generator_grads_zeroed_by_disc_step":
        "first pass: optimizer w :54, the MultiOptimizer's AdamWs, read as given each other's parameters; the case "
        "names the discriminator's zero_grad() (:84) that clears the generator's SLM gradients before their step",
    "b30f_torchdiffeq_adjoint_gradient_field_under_no_grad":
        "first pass: detach e :74, inside the stand-in adjoint solver; the case names the line inside the ODE "
        "function that runs under the solver's no_grad (:62); its fixed twin draws a cut_term warning for the "
        "create_graph gradients of the no_grad forward, which no backward runs through",
    "b30f_torchdiffeq_adjoint_rates_not_module_params":
        "first pass: no_grad e :49 in the stand-in solver and non_parameter_tensor w at :86/:87; the case names "
        "the attribute assignment in the dynamics module (:69)",
    # Batch 31, first pass 6 of 14 on d5d3444 (tests/cases/README.md): what the tool says instead.
    "b31a_functorch_regularizer_weights_plain_list":
        "first pass: unused_parameter e :40 for the zero weights made to evaluate the loss (silent since); the case "
        "names the plain list of the module's parameters (:27) that functional_call's substitutes never reach",
    "b31b_pinnstorch_val_output_fn_inference_mode":
        "first pass: no_grad e :70, the `with torch.inference_mode(...)` in the stand-in Trainer's loop; the case "
        "names the Trainer(...) line (:80) whose inference_mode default turns it on",
    "b31d_flower_fedprox_global_params_generator":
        "first pass: optimizer w :35, the deep copy's parameters getting gradients in no optimizer; the case names "
        "the generator of the copy's parameters (:37) that the first batch's zip() exhausts, leaving the "
        "proximal term 0.0",
    "b31e_tucker_relation_embedding_padding_idx":
        "first pass: nothing: one row of the embedding table (padding_idx=0, a real relation) gets no gradient while "
        "the rest of the table learns; the tool judges whole tensors",
    # Batch 32, first pass 4 of 11 on 73047f4 (tests/cases/README.md): what the tool says instead.
    "b32a_refinenet_rcu_outputs_dropped":
        "first pass: unused_parameter at the residual conv units' layers (:24, :25), where the corpus names a module "
        "whose output nothing used; the case names the forward's loop line that rebinds the unit's output and drops "
        "it (:84)",
    "b32b_gpt2_freeze_transformer_freezes_tied_lm_head":
        "first pass: autograd_error e :60, the loop that froze the transformer and with it the tied LM head (the "
        "rule's line for a loss without graph after every parameter was frozen); the case names the config that ties "
        "the head to the embedding (:56)",
    "b32f_slime_moe_noise_uses_w_gate":
        "first pass: unused_parameter e :34, where w_noise is made (the corpus's line for an unused parameter); the "
        "case names the line that uses w_gate in its place (:45)",
    # Batch 33, first pass 8 of 16 on 717ee3c (tests/cases/README.md): what the tool says instead.
    "b33b_srgan_g_loss_on_fake_out_before_optimizerd_step":
        "first pass: inplace_saved e :81, optimizerD.step() before g_loss's backward through the D output computed "
        "before it (as b26a_gan_lossg); the case names the loss line (:84) the repository's fix recomputes D(G(z)) "
        "before",
    "b33c_mobile_vod_bottleneck_lstm_hidden_detached_per_sequence":
        "first pass: inplace_saved e :89, the step that updated weights the retained graph of the previous frames "
        "saved; the case names the per-sequence detach_hidden() (:92) that the fix moves into the frame loop",
    "b33d_appfl_decaf_encode_text_no_grad":
        "first pass: no_grad e :50, the text encoder's call under the block (the corpus's line for a no_grad cut, the "
        "`with` shown in the message); the case names the `with torch.no_grad():` (:49) the fix rewrites",
    "b33d_mmseg_san_text_encoder_cached_class_embeds":
        "first pass: autograd_error e :72, the loss line that takes the class embeddings cached at :45 (named as "
        "where the value was made) with the first step's freed graph; the case names cache_feature=True (:66)",
    "b33d_peft_modules_to_save_list_append_none":
        "first pass: nothing: the head is frozen by the adapter wrapper (a LoRA target), and frozen tensors are not "
        "watched; `list.append` returning None to modules_to_save= is Python, with no tensor event to see",
    # Batch 34, first pass 6 of 12 on 10a6eba (tests/cases/README.md): what the tool says instead.
    "b34a_pyg_gnnexplainer_custom_conv_skips_propagate":
        "first pass: nothing: the edge mask gets gradients from the explainer's size term from the second step on "
        "(indexed with the bool its first None .grad left); the case names the custom layer's dense aggregation (:41) "
        "that never reads the mask set on it",
    "b34a_rgnn_prbcd_train_mode_cached_adj":
        "first pass: autograd_error e :98, the call that reuses the adjacency cached on the module in train mode (made "
        "at :63); the case names the caching flag's default (:31) the author said to switch off",
    "b34b_convirt_text_projection_under_no_grad":
        "first pass: no_grad e :56, :57, :59, the projection's calls under the block (the corpus's line for a no_grad "
        "cut); the case names the `with torch.no_grad():` (:55) the fix removes",
    "b34d_libmtl_rep_grad_detaches_encoder_uw":
        "first pass: detach e :35, the `rep.detach().clone()` that feeds each decoder; the case names the "
        "rep_grad=True flag (:58) the maintainer said to turn off",
    "b34e_mmcv_cumulative_hook_beside_optimizer_hook":
        "first pass: autograd_error e :65, the loss both hooks backpropagate (the first at :23 freed its graph); the "
        "case names the custom_hooks config (:74) that registered the second hook",
    # Batch 35, first pass 6 of 12 on 4afb82b (tests/cases/README.md): what the tool says instead.
    "b35e_kd_chunked_ce_loss_as_aux":
        "first pass: nothing. The cross-entropy term is the aux output of torch.func.grad_and_value(has_aux=True) run "
        "inside a custom Function's forward, summed into the loss the Function returns; the gradients its backward "
        "hands back were taken of the other term only, and no cut of a graph the trace follows is on the way",
    "b35f_mse_adapter_fusion_embedding_not_passed":
        "autograd_error e :66: the loss, computed from the frozen language model alone, is bound there; the case names "
        "the call that should pass the adapter's output (:54). That output (made at :53, dropped unused) has more "
        "than one value, and the trace follows only scalars left unused",
    # Batch 36, first pass 8 of 11 on 6b179ca (tests/cases/README.md): what the tool says instead.
    "b36a_mmengine_update_params_zero_grad_before_grad_print":
        "optimizer w :22, the zero_grad() inside the wrapper the script reproduces; the case names the wrapper's "
        "update_params() call (:55) in train_step, the line a user of the installed mmengine would see named (its "
        "frames are a library's there)",
    "b36f_lightning_training_step_no_return":
        "first pass: detach e :32, the training_step's log of the loss; no backward ran at all (the closure Lightning's "
        "loop hands to step() skips backward when training_step returns None): the case names the end of "
        "training_step (:43), where `return loss` is missing",
    # Batch 37, first pass 7 of 17 on 633128e (tests/cases/README.md): what the tool says instead.
    "b37b_chgnet_line_graph_no_grad":
        "first pass: nothing. The three-body bond vectors are made under no_grad and still add to the energy, whose "
        "forces autograd.grad takes; the positions get gradients through the other terms, and no step or .grad read "
        "shows the missing part (the script compares with finite differences)",
    "b37c_erayzer_intrinsics_head_detached":
        "first pass: nothing. The detached intrinsics are concatenated with live outputs, and the script sees the "
        "head's gradient norm print 0.0",
    "b37c_objectsdf_hashgrid_points_not_requiring_grad":
        "first pass: autograd_error e :44, the autograd.grad of the sdf for points whose requires_grad_ came after the "
        "forward (:42); the case names the forward (:55) before which the points should require grad",
    "b37c_pytorch3d_phong_hard_blend_camera_zero_grad":
        "first pass: non_differentiable e :41, the sign of the face area in the hard rasteriser; the case names the "
        "shader's hard alpha comparison (:51) that the soft blend replaces",
    "b37d_sam_loss_accumulator_not_reset":
        "first pass: autograd_error e :86, the second pass's backward of a loss that kept the first pass's freed terms; "
        "the case names the accumulation (:83) before which `loss = 0` belongs",
    "b37d_sam_second_pass_reuses_output":
        "first pass: autograd_error e :56, where the output was made; the case names the second pass (:63) that should "
        "run a fresh forward (SAM's first_step moved the weights in place, which no optimizer step records, and the "
        "second pass's nodes are made after the first iteration's lines were recorded)",
    "b37f_efficientpytorch_optimizer_before_conv2dsq_replacement":
        "first pass: detach and state_dict_reload e :32, the replaced convolutions' weights copied into the new ones, "
        "and optimizer w :50, the new ones in no optimizer at the helper's parameter list; the case names the call "
        "that built the optimizer before the replacement (:56)",
    "b37f_fasterai_gradual_prune_optimizer_holds_replaced_params":
        "first pass: optimizer w :49, the optimizer's parameter list; the case names the prune call (:41) after "
        "which the optimizer should be pointed at the new parameters",
    # Batch 38 (first pass 4/8 on 5ca4844).
    "b38b_mvn_lazy_scale_tril_cached_in_sample":
        "first pass: no_grad e :42, the `with torch.no_grad()` block of sample() whose rsample() first computed the "
        "cached scale_tril; the case names the lazy property's computation (:18), which the fix runs under "
        "enable_grad: the trace does not see that the value made under no_grad was cached on the object for later",
    "b38c_diffusers_ema_copy_to_clobbers_unet":
        "first pass: silent; EMA weights copied into the trained parameters (.data.copy_) and never put back, so "
        "each epoch restarts from the lagging average: a copy of values derived from the parameter itself is "
        "also what federated averaging and checkpoint restores do on purpose",
    "b38e_swag_pooler_dropped_from_optimizer":
        "first pass: optimizer w :67, the grouped parameter list the optimizer takes; the case names the list "
        "comprehension three lines above (:64) that filtered the pooler out of named_parameters()",
    # Batch 39 (first pass 2/12 on 2cc9d4f).
    "b39a_passthrough_function_tuple_input":
        "first pass: a hit at the line, of another kind: non_differentiable e :32, the custom Function given a "
        "tuple (it sees no tensor input, so its outputs carry no gradient); the case calls the refused backward an "
        "autograd_error",
    "b39b_llama_kv_cache_backward_twice":
        "first pass: autograd_error e :33, the value cache kept on the module; the case names the key cache a line "
        "above (:32): both carry the freed graph, and the fix detaches both",
    "b39c_massl_stale_outputs_after_step":
        "first pass: inplace_saved e :84, the first optimizer's step that changed weights the retained graph saved "
        "(its fix: step after every backward, or recompute the forward); the case names the loss that reuses the "
        "labelled phase's outputs (:80), which the thread detaches",
    "b39d_spikingjelly_stdp_on_grad_false_delta_dropped":
        "first pass: optimizer e :97, an SGD stepping without any backward in the run; the case names the STDP "
        "learner's step(on_grad=False) (:96), whose returned update is thrown away",
    "b39e_style_transfer_closed_hooks_stale_features":
        "first pass: autograd_error e :45, the backward that found the graph freed; the case names the read of the "
        "closed hooks' stale features (:91), an attribute read the trace does not see as an op",
    # Batch 41, first pass on the build with batch 40's round (tests/cases/README.md): what the tool said instead.
    "b41a_lmf_fusion_weights_sliced_out_of_optimizer":
        "first pass: optimizer w :59, the optimizer whose two groups are slices of parameters() with a gap between "
        "them; the case names the second slice (:58), which the author widened, where the first could as well have been",
    "b41f_transformer_cross_attn_reuses_self_attn":
        "first pass: unused_parameter errors at the encoder layer's definitions (:72-:75); now also unused_parameter at "
        "the case's line (:96), the second self-attention call where the never-called cross-attention belongs, but a "
        "warning: the script reads the encoder's gradient, not the cross-attention's",
    # Batch 42, first pass on the build with batch 41's round (tests/cases/README.md): what the tool said instead.
    "b42a_adadp_px_expander_proc_size_one_zero_grads":
        "first pass: no_update w :93, the step that read all-zero gradients; the case names the `if bs > 1:` (:61) that "
        "kept the noisy sum from being written back into .grad, a line that never ran",
    "b42b_higher_meta_lstm_param_groups_deepcopy":
        "first pass: unused_parameter e :58 for the optimiser model whose .grad the script prints, optimizer w :26 for "
        "the deep copies that get the gradients, and two warnings for the inner optimizer never stepped (gone since "
        "`_container`); the copies' finding is at the case's line, without the original's symptom",
    # Batch 58, first pass on 8d1477b (tests/cases/README.md): what the tool said instead.
    "b58a_learn2learn_rnn_clone":
        "first pass and now: non_parameter_tensor w :90 for the cached flat-weight list the script's stand-in for torch "
        "1.4's LSTM runs from, and autograd_error e :154 for the autograd.grad that found the clone's parameters "
        "unused; the case names clone_module's `return clone` (:107), before which the fix rebuilds that list",
    "b58c_ml_agents_multicategorical_entropy":
        "first pass and now: cut_term w :57 inside the entropy's cross-entropy, whose input is the sampled one-hot "
        "(no history); the case names the call that passes it in place of the log-probabilities (:41), the two "
        "arguments swapped",
    "b58d_sdscripts_unet_only_gradckpt":
        "first pass and now: no_grad e :86, the reentrant checkpoint none of whose inputs required grad (fix: "
        "use_reentrant=False, or an input that requires grad); the case names the U-Net's call (:203), where the fix "
        "makes the noisy latents require grad",
    # Batch 57, first pass on 2b296db (tests/cases/README.md): what the tool said instead.
    "b57a_torch_prune_remove_lstm_flat_weights":
        "first pass and now: autograd_error e :39, the line of the script's stand-in for RNNBase.__setattr__ that keeps "
        "the masked weight (made at :75) the LSTM runs from, whose graph the first backward freed; the case names "
        "prune.remove's register_parameter (:99), which the fix turns into a setattr that refreshes that list",
    "b57d_accelerate_fsdp_optimizer_before_prepare":
        "first pass and now: optimizer w :121 for the flat parameter the AdamW built there does not hold, at the case's "
        "line but without its symptom (:131, the .grad read of an original weight, related to the detach and "
        "new_parameter errors at :42 and :44 inside the script's stand-in for FSDP's flattening)",
    "b57e_flowfactory_lora_skip_frozen":
        "first pass and now: autograd_error e :168, the requires_grad_(False) that froze every parameter of the "
        "transformer before the refused backward; the case names the `continue` (:185) of the branch that skips "
        "re-applying LoRA, where the fix switches the adapter's parameters back on",
    "b57e_unsloth_lmhead_lora_bypassed":
        "first pass and now: unused_parameter e :28 and :29, lm_head's LoRA factors, whose module the forward never "
        "calls (it reads lm_head.weight, the frozen base weight); the case names the list of modules redirected to "
        "modules_to_save (:138), where the fix adds lm_head",
    # Batch 56, first pass on 35188b7 (tests/cases/README.md): what the tool said instead.
    "b56b_torchrec_dlrm_fused_optimizer":
        "first pass and now: no_update w :95, the SGD the script's stand-in for DistributedModelParallel builds for the "
        "fused tables and never steps; the case names the user's optimizer (:112), which the fix combines with it",
    "b56c_matgl_test_inference_mode":
        "first pass: autograd_error e :54, 'no cut the trace saw explains why'; now no_grad e :118, the `with context:` "
        "that entered inference mode in the script's stand-in for Lightning's Trainer.test; the case names the "
        "Trainer(...) call (:142), where the fix passes inference_mode=False",
    "b56d_torch_points3d_pointnet_built_in_set_input":
        "first pass and now: nothing; the optimizer refuses the empty parameter list before set_input builds the "
        "layers (:87), a line that never runs",
    "b56e_gpytorch_test_cache_backward_twice":
        "first pass and now: autograd_error e :96, the line that keeps the predictive cache on the model (made at :54, "
        "`defined`); the case names the line that computes it (:54), where the fix detaches it",
    "b56e_pyro_module_outside_model_not_trained":
        "first pass and now: nothing; no optimizer is ever built (the script's SVI steps only the parameters its trace "
        "saw), and the module's gradients are never read; the case names pyro.module(...) outside the model (:98)",
    # Batch 54, first pass on e89c327 (tests/cases/README.md): what the tool said instead.
    "b54a_raft_altcorr_no_autograd":
        "first pass and now: no_grad e :40, the no_grad block the script's stand-in for the CUDA kernel computes in; "
        "the case names the direct call of that kernel (:73), which the fix wraps in an autograd.Function",
    "b54b_deepspeedchat_lora_module_name":
        "first pass and now: autograd_error e :97, the freeze of every parameter but LoRA's inside the script's copy "
        "of only_optimize_lora_parameters; the case names the --lora_module_name argument (:180) that matched no layer",
    "b54c_unsloth_gemma4_vision_lora_hook":
        "first pass and now: no_grad e :57, the checkpointed blocks' forward without grad; the case names the loop "
        "that stops at the first trainable parameter (:126), so only the language tower's input gets the hook",
    "b54d_tabnet_decoder_feat_transformers_unused":
        "first pass and now: unused_parameter at the decoder's GLU layers (:40, :42), with their call as `used`; the "
        "case names the next line (:152), which overwrites their output instead of taking it",
    # Batch 53, first pass on eecb30f (tests/cases/README.md): what the tool said instead.
    "b53a_mmdet_resnet_forward_plugin_unused":
        "first pass and now: unused_parameter e :21 (warnings :19, :23) at the layers of the plugin whose output is "
        "overwritten, with its call (:73) as `used`; the case names that call, which passes the block's input instead "
        "of the previous plugin's output",
    "b53a_yolov5_smart_optimizer_drops_custom_param":
        "first pass and now: optimizer w :68, the optimizer built from the groups; the case names the grouping loop's "
        "`elif` (:62), which has no branch for a bare Parameter such as BiFPN's fusion weight",
    "b53c_transformers_bertology_head_mask":
        "first pass and now: non_leaf_watched e :156, the index_fill that makes the next mask from the one that "
        "requires grad; the case names the view_as after it (:158), where the fix adds .clone().detach()",
    "b53d_mixtureofdepths_router_unweighted":
        "first pass and now: non_differentiable e :45, the topk over the router's logits (only indices reach the "
        "loss); the case names the scatter_add of the unweighted block output (:62), which the fix weights",
    "b53d_musubi_qgalore_function_no_anchor":
        "first pass and now: nothing; no input of the custom Function requires grad, so autograd records no node and "
        "the backward that fills weight.float_grad by hand never runs (the weight is a frozen uint8 Parameter)",
    "b53e_gaussian_splatting_densify_grad_none":
        "first pass and now: nothing; densification hands the optimizer new Parameters (torch.cat of the old ones) "
        "whose .grad is None until the next backward; the case names that nn.Parameter (:75), where the fix carries "
        "the old gradient over",
    # Batch 52, first pass on 657567e (tests/cases/README.md): what the tool said instead.
    "b52a_monai_dynunet_unused_heads":
        "first pass and now: unused_parameter e :65, the line of the skip layer that keeps the heads' module list; the "
        "case names the line that builds one head per decoder level (:131) where only deep_supr_num are used",
    "b52b_deepctr_torch_reg_weight_unbind_views":
        "first pass: nothing (the tool's own error on the refused view: 'could not explain'); now autograd_error e :103, "
        "the use of a row of the weight after the step changed it; the case names list(weight_list) (:88), which "
        "stored the weight's rows",
    "b52b_fuxictr_dien_add_loss_never_called":
        "first pass and now: unused_parameter at the auxiliary net's layers (:26, :29); the case names DIEN's add_loss "
        "(:61), an override of a hook the base class no longer calls",
    "b52c_speechbrain_pretrained_freeze_params":
        "first pass and now: autograd_error e :82, the freeze inside the script's copy of Pretrained.__init__ (every "
        "parameter frozen); the case names the from_hparams call without freeze_params=False (:113)",
    "b52c_torchaudio_rnnt_reuse_logits_for_grads":
        "first pass and now: autograd_error e :172, the backward; the case names the copy_ of the gradients into the "
        "logits inside the custom Function's forward (:86), which changed the caller's log_softmax output in place",
    "b52d_config_pinn_nu_skipped_none_grad":
        "first pass and now: nothing; torch.stack of gradient vectors of unequal length raised outside autograd, "
        "because a None gradient (nu, unused by two of the loss terms) was skipped",
    "b52d_diffwofost_leaf_dynamics_detach":
        "first pass and now: non_differentiable e :71, a clamp whose values are all beyond its bound, and cut_term "
        "warnings for the simulator's rebound states; the case names the .detach().clone() of the leaf classes (:89)",
    "b52f_bayesiantorch_resnet_kl_sum":
        "first pass and now: cut_term w :175, the rebinding of each block's KL inside the loop; the case names the sum "
        "after the loop (:176), which the fix moves into it",
    "b52f_pyro_csis_unused_guide_param":
        "first pass and now: optimizer w :84, the autograd.grad over every guide parameter; the case names the line "
        "that adds a None gradient (:86)",
    "b52f_pyro_gp_stale_param_store":
        "first pass and now: unused_parameter e :62 for the second model's own parameters and optimizer w :138 for the "
        "stored ones; the case names the second model's construction (:164), before which the store must be cleared",
    # Batch 51, first pass on 39e82ff (tests/cases/README.md): what the tool said instead.
    "b51a_vectorquantize_residual_zero_grad":
        "first pass and now: silent; `residual - quantized` of a straight-through output has a Jacobian of exactly "
        "zero, so the later quantizers' losses send all-zero gradients to the input, after the first quantizer's "
        "gave it a nonzero one (zero gradients are looked for in a tensor's first two only)",
    "b51d_fairseq2_wav2vec2_target_detach":
        "first pass and now: silent; the contrastive targets' detach cuts one path of the frontend, which the masked "
        "branch still trains (a detached target is how BYOL-style losses are meant)",
    "b51f_lightning_untoggle_accumulate":
        "first pass and now: autograd_error e :46, the line of the script's copy of toggle_optimizer that put back the "
        "frozen flags it had saved, where every parameter was frozen at the refused backward (the line b48d and the "
        "freeze cases name); the case names the accumulation branch's closure() (:81), after which the fix adds "
        "untoggle_optimizer",
    # Batch 50, first pass on 401417b (tests/cases/README.md): what the tool said instead.
    "b50a_3dvnet_refine_loss_dropped":
        "first pass and now: no_grad e :89 for the refinement networks, the depth metric computed from their output "
        "under no_grad, and a cut_term w at the training_step call (:179) for the dropped terms made inside MAELoss "
        "(:83); the case names the line in forward that binds the refinement loss and never adds it (:128)",
    "b50a_ngp_pl_same_image_pose_view":
        "first pass and now: autograd_error e :174, the backward, worded as a value that outlives its iteration; the "
        "pose is a view of a registered buffer that an in-place correction writes its graph into, and the case names "
        "the dataset's 0-dim index (:73) that makes the indexing return that view",
    "b50b_torchrl_iql_single_qvalue_clone":
        "first pass: new_parameter e :31, the nn.Parameter inside the script's copy of convert_to_functional; now the "
        "same, with an optimizer w :100 for the copies; the case names the DiscreteIQLLoss call that asks for the "
        "expansion (:54)",
    "b50c_fastchat_lora_gradckpt_frozen_embeddings":
        "first pass and now: no_grad e :119, the reentrant checkpoint call whose inputs require no grad, with "
        "model.enable_input_require_grads() in its fix; the case names the get_peft_model line (:288) the fix follows",
    "b50c_tevatron_lora_resume_adapter_not_trainable":
        "first pass and now: detach e :163, the state_dict() copy that saved the first stage's adapter, whose values the "
        "frozen adapter loaded in the second stage carries; the case names PeftModel.from_pretrained without "
        "is_trainable=True (:245), which loaded the adapter frozen",
    "b50d_torchpme_kvectors_cache":
        "first pass and now: autograd_error e :138, the calculator's call, with the k-vectors' line (:38) as defined; "
        "the case names the line that reuses the cached k-vectors of an earlier cell (:56)",
    "b50e_learn2learn_detach_module_requires_grad":
        "first pass: autograd_error e :78, worded as a loss made from nothing that requires grad; now detach e :53, the "
        "detach_() inside the script's copy of detach_module; the case names the call without keep_requires_grad=True "
        "(:74)",
    "b50f_ultralytics_build_optimizer_mha":
        "first pass and now: optimizer w :107, the Adam given the parameter groups the loop built; the case names that "
        "loop (:98), which files only attributes named weight and bias and leaves out MultiheadAttention's in_proj_*",
    # Batch 49, first pass on 94a4a02 (tests/cases/README.md): what the tool said instead.
    "b49c_powerfulbenchmarker_proxynca_no_metric_loss_optimizer":
        "first pass and now: optimizer w :27, the proxies' definition in the loss, for two optimizers built in a loop "
        "from a config dict neither of which should hold them; the case names the config dict (:103) that lacks a "
        "metric_loss_optimizer entry",
    "b49c_torchreid_triplet_fixbase_frozen_backbone":
        "first pass and now: autograd_error e :171, the line that summed the loss, worded as computed from no "
        "parameter: the backbone was frozen by open_specified_layers and only the classifier, whose output the "
        "triplet loss drops, stayed trainable, which the all-frozen rule does not cover; the case names the config's "
        "fixbase_epoch (:196)",
    "b49f_botorch_train_targets_with_graph":
        "first pass and now: autograd_error e :108, where the script's copy of ExactGP keeps the targets on the module "
        "(store them detached there); the case names the user's line that computed the targets from a leaf that "
        "requires grad (:184), where the maintainers' advice detaches them",
    "b49f_botorch_modellistgp_second_model_never_called":
        "first pass and now: unused_parameter e :111 and :112 for the second model's likelihood and modules, never "
        "called, at the lines of ExactMarginalLogLikelihood.__init__ that attach them (the parent they were named "
        "under); the case names the call that gives the model list one input for two models (:198), which zip() "
        "truncates",
    # Batch 48, first pass on 52f3136 (tests/cases/README.md): what the tool said instead.
    "b48d_scd_lora_checkpoint_grad_frozen_params":
        "first pass and now: autograd_error e :127, the requires_grad_(False) that froze the U-Net's weights, which "
        "the checkpoint's autograd.grad then asks about (the line b42 and b45 freeze cases name); the case names that "
        "autograd.grad inside the script's copy of the checkpoint Function (:49), where the fix filters its inputs",
    "b48f_so_euler_rotation_matrix_torch_tensor":
        "first pass and now: tensor_rewrap e :25, the last of three torch.tensor() matrices built from the one angle "
        "tensor (roll = yaw = pitch): one finding per tensor names its latest cut; the case names the first (:15)",
    "b48g_pytorch_stack_module_state_nonleaf_params":
        "first pass and now: non_leaf_watched e :41, the call of stack_module_state, which the script holds as its "
        "own code and whose torch.stack (:23) makes the non-leaf; the case names the stack inside it, where the PR "
        "detaches and marks the result requires_grad",
    # Batch 47, first pass on 2b18792 (tests/cases/README.md): what the tool said instead.
    "b47b_rllib_cql_lagrangian_alpha_prime_detached":
        "first pass and now: detach e :67, the other detach of alpha' (in the Q network's CQL loss, where it is meant); "
        "the case names the Lagrangian loss's detach (:69), which keeps alpha' from its own loss",
    "b47b_sb3_sac_ent_coef_reloaded_tensor_not_in_optimizer":
        "first pass and now: silent; the entropy coefficient torch.load rebuilds is set over the attribute the "
        "optimizer's tensor was on, and a tensor made by unpickling is not watched, so nothing says it gets gradients "
        "in no optimizer",
    # Batch 46, first pass on 70a1679 (tests/cases/README.md): what the tool said instead.
    "b46a_diffusers_autoencoderkl_disc_loss_never_stepped":
        "first pass and now: no_update w :73, the discriminator's optimizer, whose parameters get gradients from the "
        "generator's loss and which never steps; the case names the discriminator's loss (:103), logged and never "
        "differentiated, where the PR adds its backward and step",
    "b46a_vqdiffusion_empty_text_embed_without_learnable_cf":
        "first pass and now: unused_parameter e :64, the forward's line that uses the embedding, which never ran "
        "(learnable_cf is False); the case names where it is made regardless (:48)",
    "b46b_suave_hivae_prior_mean_layer_bypassed_in_kl":
        "first pass and now: unused_parameter e :18, the prior-mean layer's linear, never called; the case names the "
        "helper that returns the old frozen means instead of the layer's (:49)",
    "b46f_symbolic_simplifier_enforce_encoding_reuses_stale_encoding":
        "first pass and now: inplace_saved e :54, the encoder optimizer's step that updated the weights the shared "
        "encoding's graph saved; the case names the call that hands that stale encoding on (:109)",
    # Batch 45, first pass on 48a4740 (tests/cases/README.md): what the tool said instead.
    "b45a_pysyft_federated_client_stale_optimizer":
        "first pass and now: optimizer w :40, the cached optimizer's construction, for each round's new model that "
        "gets gradients in no optimizer; the case names set_obj (:33), where the PR resets the cache",
    "b45b_higher_fomaml_track_higher_grads_false_detaches":
        "first pass and now: detach e :48, the detach inside the script's stand-in for higher's step, which the "
        "script holds as its own code; the case names the track_higher_grads=False flag (:82) the thread changes",
    "b45d_pyannote_totatonet_manual_optimization_never_steps":
        "first pass: silent (no backward ran at all); now: optimizer e :47, the branch that holds training_step's "
        "one backward() and never ran; the case names automatic_optimization = False (:25), which the condition of "
        "the trainer's own branch reads",
    # Batch 44, first pass on db64145 (tests/cases/README.md): what the tool said instead.
    "b44a_rotated_giou_floattensor_rewrap":
        "first pass: item e :58, the line, worded as int() of a value computed from the head's weights: the legacy "
        "constructor torch.FloatTensor(values) reads each 0-dim tensor as a number, which the case labels a rewrap",
    "b44b_dino_teacher_alias_student":
        "first pass: silent; the student and the teacher are one module (`= encoder` twice), so freezing the teacher "
        "froze the student: a whole frozen block reads as fine-tuning",
    "b44d_stateful_gru_state_assign_inplace":
        "first pass: autograd_error e :60, the refused backward, worded as a write the trace did not see: the write is "
        "a copy_ under no_grad into the state tensor (no grad, so not watched), the case names where the state went "
        "into the GRU uncopied (:34)",
    "b44e_ode_event_fn_grad_under_no_grad":
        "first pass: no_grad e :41, the event function's call inside the solver's `with torch.no_grad():` (:40), which "
        "the script holds as its own code; the case names the energy inside the event function (:31), where the "
        "thread wraps torch.enable_grad() because the solver is a library's",
    "b44f_clone_set_params_restores_old_optimizer":
        "first pass: optimizer w :56 (the original model's optimizer, whose parameters the clone's copies do not "
        "share), no_update w :35 and unused_parameter w :55; the case names set_params (:43), which put the old "
        "optimizer back over the clone's new one",
    # Batch 43, first pass on 5e67dcf (tests/cases/README.md): what the tool said instead.
    "b43c_te_amp_cast_wgrad_none":
        "first pass: non_differentiable e :47, the custom Function's return that gives None for the weight; the case "
        "names the cast inside forward (:16) that left the weight's copy without grad, which the thread fixes",
    "b42f_infomaxvae_disc_backward_after_vae_step":
        "first pass: inplace_saved e :88, the VAE's optimizer step that updated the weights the discriminator's backward "
        "still needed; the case names that backward (:92), which the maintainer restricted with inputs=",
}
#: Fixed twins that still get a finding, with why (strict as well).
KNOWN_NOISY: dict[str, str] = {
    # Batch 55, first pass.
    "b55c_deepinv_gspnp_grad_disabled":
        "unused_parameter e :77: the reporter's snippet makes a leaf x, computes y from it and rebinds both without "
        "a backward: true, kept as the thread has it",
    # Batch 54, first pass.
    "b54e_sentimentrnn_manual_clip_unused_attention":
        "unused_parameter e :49, the attention layer the RNN model type never calls: true (the thread's fix only "
        "skips its None gradients in the clipping loop), kept as the repository has it",
    # Batch 52, first pass.
    "b52a_finetunesam_encoder_no_grad":
        "unused_parameter w :76, SAM's IoU prediction head, called and dropped by the fine-tuning loss: true, kept as "
        "the repository has it",
    "b52d_diffwofost_leaf_dynamics_detach":
        "cut_term w :115 and :149: the simulator's daily state scalars, rebound every day, read as dropped loss "
        "terms; a precision gap of the dropped-terms rule on scalar simulators",
    # Batch 51, first pass.
    "b51a_glowpytorch_coupling_inplace":
        "detach e :322: Glow's prior_h is a Parameter the optimizer holds that the model only ever uses as "
        "prior_h.detach().clone(), so it never learns: true, kept as the repository has it",
    "b51e_captum_lig_attribution_no_graph":
        "no_grad e :35: with the fix, the attribution loss still reaches the embedding only through the layer's "
        "activations, which captum's _forward_layer_eval computes with gradients off: true (the writer notes it), "
        "kept as the fix left it",
    # Batch 50, first pass.
    "b50d_traffic4cast_linkpredictor_optimizer":
        "unused_parameter w :75 and :76, CongestioNN's two pooling heads, which the link-prediction task never calls "
        "while the optimizer holds them: true, kept as the repository's fix left it",
    # Batch 49, first pass.
    "b49c_torchreid_triplet_fixbase_frozen_backbone":
        "unused_parameter e :27 for the classifier, which the triplet-only config (weight_x=0) computes and drops "
        "while the optimizer holds it and open_all_layers makes it trainable: true (DDP would refuse it), kept as the "
        "repository's fix left it",
    # Batch 45, first pass.
    "b45b_higher_fomaml_track_higher_grads_false_detaches":
        "cut_term w :74: the fix is first-order MAML by design (grad_callback detaches the inner gradients), which "
        "rules.md says draws this warning, to be suppressed",
    "b45e_i2a_distil_policy_step_calls_main_optimizer":
        "no_grad e :45: the distilled policy's critic head is computed under no_grad to pick actions, and its value "
        "is dropped where it is computed with gradients (:76), so it never learns: true of the script, but the cut "
        "is not the cause",
    # Batch 44, first pass.
    "b44f_clone_set_params_restores_old_optimizer":
        "unused_parameter w :56: the original classifier, whose optimizer holds its network, never trains in the "
        "script (only its clone does: true of the script)",
    "b44e_ode_event_fn_grad_under_no_grad":
        "cut_term w :20: the event function takes the energy's gradient with create_graph=True only to test a norm, "
        "and no backward ever runs through it (true of the script: create_graph is not needed there)",
    # Batch 43, first pass.
    "b43c_rl_trainer_zero_grad_per_microbatch":
        "optimizer w :55: the reference model whose gradients the script computes to compare gets them and no optimizer "
        "holds it (true of the script: nothing steps it)",
    # Batch 35's round: a mechanism added for batch 35 finds it in an earlier twin.
    "b23e_bertfp_grad_accum_backward_only_in_else":
        "optimizer e :45: the twin keeps the report's optimizer.zero_grad() (and model.zero_grad()) at the top of each "
        "micro-batch while it steps every gradient_accumulation_steps=2 batches, so each step sees only the last "
        "micro-batch (true of the report's code: the thread fixed the backward in the else branch only)",
    # Batch 31, first pass.
    "b31a_functorch_regularizer_weights_plain_list":
        "detach e :46: the module's own weights, whose .grad the script prints to show it stays None, are copied "
        "with .detach().clone() into the functional weights an optimizer trains; the copy is on purpose",
    "b31b_minigp_stgp_length_scale_exp_in_init":
        "unused_parameter e :41: log_signal_variance is never used in the likelihood, in the report's model as "
        "well (a true finding the thread's fix leaves alone)",
    # Batch 30, first pass.
    "b30f_torchdiffeq_adjoint_gradient_field_under_no_grad":
        "cut_term w :58: the gradients the ODE function takes with create_graph=True during the adjoint solver's "
        "no_grad forward reach no backward (the adjoint's backward recomputes them), which the rule for a gradient "
        "penalty left out of the loss cannot tell apart",
    # Batch 22, first pass.
    "b22b_deeplearningbyhand_label_graph_backward_twice":
        "detach e :65: the fix's .detach() of the labels cuts true_w and true_b, made with requires_grad=True and "
        "never trained (true of the script; dropping requires_grad=True there would fix it as well)",
    "b22c_t2iadapter_frozen_unet_ldm_checkpoint":
        "optimizer w :156: the UNet left trainable gets gradients and no optimizer holds it (true of the script: the "
        "thread's fix)",
    # Batch 7, first pass.
    "b7_skip_ganomaly_latent_loss_detached":
        "optimizer warnings at 11/12/23: netd gets gradients from err_g but no optimizer holds it and it is not "
        "frozen (true of the script: the twin trains netg only, the report's discriminator step is left out)",
    "b7_ctg_swapped_optimizer_params":
        "first pass: non_parameter_tensor:16, non_parameter_tensor:17, optimizer:33 on the fixed twin",
    # Batch 10, first pass.
    "b10_fpn_lateral_iadd_relu_output":
        "unused_parameter at 10: fpn_convs[1] and [2] run, but only outs[0] reaches the loss (true of the "
        "script, not the report's bug)",
    # Batch 18, first pass.
    "b18a_esm_vqvae_decoder_takes_indices":
        "unused_parameter w :50: the decoder's token embedding, unused once z_q is fed (true of the script)",
    "b18c_transformers_generate_no_grad_in_training":
        "unused_parameter w :21: lm_head runs, its logits reach no loss (true of the script)",
    # Batch 19, first pass.
    "b19a_fedshare_fedprox_data_proximal_term":
        "optimizer w :50 and :24: the global copy's weights get gradients through the proximal term and no optimizer "
        "holds them (true of the script, as of the repo's fix)",
    "b20f_gail_airl_ppo_clamp_inplace_on_chunk_view":
        "optimizer w :69: the critic gets gradients through the actor's loss and is in no optimizer: the script "
        "keeps SAC's actor update only (true of the script)",
    # Batch 39, first pass.
    "b39c_massl_stale_outputs_after_step":
        "unused_parameter e :34: the reconstruction decoder, made trainable for the unlabelled phase, whose loss uses "
        "outputs the labelled phase computed with it frozen, detached in the thread's fix (true of the script)",
    "b39d_spikingjelly_stdp_on_grad_false_delta_dropped":
        "optimizer e :98: the SGD still steps at every time step with no backward in the run, the weight now "
        "updated by hand (true of the script)",
}


@pytest.fixture(autouse=True)
def process_defaults_restored():
    """A case may change process-wide defaults (NIDN's FDTD backend sets float64 on import, WavLM's reporter turns
    anomaly detection on): the next test, in this file or another, starts from torch's own."""
    dtype = torch.get_default_dtype()
    anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    yield
    torch.set_default_dtype(dtype)
    torch.autograd.set_detect_anomaly(*anomaly)


def _run(path: Path, entry: str) -> tuple[list[Any], BaseException | None]:
    """Run one script as the case says; the findings as JSON dicts, and the exception it raised."""
    if entry == "plain":
        outcome = run_script(ScriptRunner(str(path)))
        return [], outcome.exception
    torch.set_grad_enabled(True)  # a case that turned gradients off for good (silero's init) ran before this one
    tracer = trace()
    if entry == "pretrace":
        spec = importlib.util.spec_from_file_location(f"case_{path.parent.name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        objects = module.setup()
        error = None
        try:
            with tracer:
                module.step(*objects)
        except Exception as exc:  # the script's own failure, as the CLI would show it
            error = exc
        del objects, module
    else:
        outcome = run_script(ScriptRunner(str(path)), tracer)
        error = outcome.exception
    document = json_document(script=str(path), argv=[str(path)], exit_code=0, watched=tracer.watched,
                             findings=tracer.findings)
    undeclared = [(f["kind"], f["severity"]) for f in document["findings"]
                  if f["severity"] not in rule_for(f["kind"]).levels]
    assert not undeclared, f"severities their rows in rules.py do not declare: {undeclared}"
    return document["findings"], error


def _library_marks(case: dict) -> list[Any]:
    """A case whose scripts build a torchvision model needs torchvision (the compat pass goes without it)."""
    text = (CASES_DIR / case["case"] / "bug.py").read_text()
    return [pytest.mark.needs_torchvision] if re.search(r"^(import|from) torchvision\b", text, re.M) else []


def _params():
    for case in CASES:
        marks = _library_marks(case)
        if case["case"] in KNOWN_MISSES:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case["case"]]))
        yield pytest.param(case, id=case["case"], marks=marks)


@pytest.mark.parametrize("case", list(_params()))
def test_bug_is_named_at_its_line(case, one_torch_thread):
    path = CASES_DIR / case["case"] / "bug.py"
    findings, error = _run(path, case.get("entry", "script"))
    raises = case.get("raises")
    if raises is not None:
        assert type(error).__name__ == raises, error
        assert f"bug.py:{case['line']}" in str(error), str(error)
    if case.get("entry") == "plain":
        return
    matching = [f for f in findings if f["kind"] == case["kind"] and f["line"] == case["line"]
                and f["file"] == str(path)]
    shown = [(f["kind"], f["severity"], f["line"], f["tensor"]) for f in findings]
    assert matching, f"no {case['kind']} at line {case['line']}; found {shown}"
    assert any(f["severity"] == case["severity"] for f in matching), shown
    if "tensor" in case:
        assert any(f["tensor"] == case["tensor"] for f in matching), shown
    for place in case.get("related", []):
        assert any({"file": str(path), "line": place["line"], "role": place["role"]} in f["related"]
                   for f in matching), [f["related"] for f in matching]


def _twins():
    for case in CASES:
        marks = _library_marks(case)
        if case["case"] in KNOWN_NOISY:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_NOISY[case["case"]]))
        yield pytest.param(case, id=case["case"], marks=marks)


@pytest.mark.parametrize("case", list(_twins()))
def test_fixed_twin_is_silent(case, one_torch_thread):
    path = CASES_DIR / case["case"] / "fixed.py"
    findings, error = _run(path, case.get("entry", "script"))
    assert error is None, repr(error)
    loud = [(f["kind"], f["severity"], f["line"], f["tensor"]) for f in findings
            if f["severity"] in ("error", "warning")]
    assert not loud, loud


def test_the_corpus_covers_every_family():
    families = {case["family"] for case in CASES}
    assert families == set(range(1, 8))
    assert len(CASES) >= 40
    for case in CASES:
        assert (CASES_DIR / case["case"] / "bug.py").is_file() and (CASES_DIR / case["case"] / "fixed.py").is_file()
