"""Plausible bugs in the batched linear stack (flprivacy.stack): the forward pass, the risk and the
hand-written backpropagation that local SGD (FedAvg's batched engine), Alg. 4's tuning, Model-w-O
and the gradient-based AIA (Diana et al. 2025 eq. 2) all run on.

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/stack.py

Each mutant breaks one step of ∂ℓ/∂W = Δᵀ A, ∂ℓ/∂b = Σ_rows Δ (the module docstring) or of the
forward pass; ``why`` names it.

Not listed: dropping ``_by_hand``'s test for floating-point cross-entropy targets. It only changes
which error an unsupported target raises: class probabilities fail on both paths
(``per_sample_loss_from_output`` reshapes the targets to one per row), and float-typed class
indices fail on the autograd path and would be accepted by hand. Both errors are PyTorch's own,
not the library's; see the note of 2026-11-28.
"""

from tools.mutation import Mutant, pytest_command

ST = "src/flprivacy/stack.py"

TESTS = pytest_command("tests/test_batched.py", "tests/test_gradient_aia_relaxation.py")

MUTANTS = [
    # ---- forward --------------------------------------------------------------------------------------
    Mutant("forward_drops_bias", ST, "                    z = z + thetas[:, layer.b].unsqueeze(1)\n",
           "                    z = z\n", "a linear layer is W a + b"),
    Mutant("forward_skips_activation", ST, "                a = layer(a)\n", "                a = a\n",
           "the element-wise activations sit between the linear layers"),
    Mutant("forward_keeps_output_as_input", ST, "                    inputs.append(a)\n",
           "                    inputs.append(z)\n", "a layer's per-sample gradient uses its input A, not its output"),
    # ---- the risk ---------------------------------------------------------------------------------------
    Mutant("masked_risk_ignores_mask", ST, "        return (ell * mask).sum(1) / mask.sum(1)\n",
           "        return ell.mean(1)\n", "a padded client's risk is over her own rows only"),
    Mutant("risk_is_a_sum", ST, "            return ell.mean(1)\n", "            return ell.sum(1)\n",
           "the empirical risk is a mean over rows (FedAvg's local objective)"),
    # ---- the hand-written gradient ---------------------------------------------------------------------
    Mutant("row_weight_not_mean", ST, "            weight = torch.full((M, n), 1.0 / n, dtype=self.dtype)\n",
           "            weight = torch.full((M, n), 1.0, dtype=self.dtype)\n", "the risk is a mean: each row weighs 1/n"),
    Mutant("mask_weight_not_normalised", ST, "            weight = mk / mk.sum(1, keepdim=True)\n",
           "            weight = mk / mk.shape[1]\n", "a padded client's rows weigh 1/n_c, not 1/n_max"),
    Mutant("mse_derivative_halved", ST, "            d = 2.0 * (out - yy.to(self.dtype).reshape(out.shape))\n",
           "            d = 1.0 * (out - yy.to(self.dtype).reshape(out.shape))\n", "∂(f − y)²/∂f = 2(f − y)"),
    Mutant("mse_derivative_sign", ST, "            d = 2.0 * (out - yy.to(self.dtype).reshape(out.shape))\n",
           "            d = 2.0 * (yy.to(self.dtype).reshape(out.shape) - out)\n", "the gradient points uphill"),
    Mutant("bce_derivative_without_sigmoid", ST,
           "            d = torch.sigmoid(out) - yy.to(self.dtype).reshape(out.shape)\n",
           "            d = out - yy.to(self.dtype).reshape(out.shape)\n", "∂BCE(σ(f), y)/∂f = σ(f) − y"),
    Mutant("ce_derivative_sign", ST,
           "            d = torch.softmax(out, -1) - torch.nn.functional.one_hot(yy.long(), out.shape[-1]).to(self.dtype)\n",
           "            d = torch.nn.functional.one_hot(yy.long(), out.shape[-1]).to(self.dtype) - torch.softmax(out, -1)\n",
           "∂CE/∂logits = softmax − one-hot"),
    Mutant("ce_derivative_no_softmax", ST,
           "            d = torch.softmax(out, -1) - torch.nn.functional.one_hot(yy.long(), out.shape[-1]).to(self.dtype)\n",
           "            d = torch.sigmoid(out) - torch.nn.functional.one_hot(yy.long(), out.shape[-1]).to(self.dtype)\n",
           "cross-entropy normalises over the classes"),
    Mutant("relu_backward_skipped", ST,
           "                    d = torch.ops.aten.threshold_backward(d, preacts[li], 0)   # ReLU' at the pre-activation below\n",
           "                    pass\n", "ReLU' masks the rows whose pre-activation is negative"),
    Mutant("relu_backward_wrong_layer", ST,
           "                    d = torch.ops.aten.threshold_backward(d, preacts[li], 0)   # ReLU' at the pre-activation below\n",
           "                    d = torch.ops.aten.threshold_backward(d, preacts[li + 1], 0)\n",
           "ReLU' is taken at the pre-activation of the layer below it"),
    Mutant("weight_grad_transposed", ST, "            grad[:, layer.w] = torch.bmm(d.transpose(1, 2), a).reshape(M, -1)\n",
           "            grad[:, layer.w] = torch.bmm(a.transpose(1, 2), d).reshape(M, -1)\n",
           "∂ℓ/∂W = Δᵀ A (out x in, row-major in θ), not Aᵀ Δ"),
    Mutant("bias_grad_mean", ST, "                grad[:, layer.b] = d.sum(1)\n", "                grad[:, layer.b] = d.mean(1)\n",
           "∂ℓ/∂b = Σ_rows Δ (the rows' weights are already in Δ)"),
    Mutant("backprop_through_transpose", ST,
           "                d = torch.bmm(d, thetas[:, layer.w].view(M, layer.n_out, layer.n_in))\n",
           "                d = torch.bmm(d, thetas[:, layer.w].view(M, layer.n_in, layer.n_out).transpose(1, 2))\n",
           "Δ_below = Δ W, with W stored (out, in) row-major"),
    # ---- per-sample signals (the gradient-based AIA's per-sample gradients) -----------------------------
    Mutant("signals_of_the_mean", ST, "            deltas = torch.autograd.grad(losses.sum(), preacts)\n",
           "            deltas = torch.autograd.grad(losses.mean(), preacts)\n",
           "Δ_j is the derivative of row j's own loss, not of the mean"),
]
