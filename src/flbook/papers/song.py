"""Song et al. 2025 as the paper reports it: its settings (Table I), cases (§5.2), search ranges
(Table II), weights (Table III), results (Table IV) and claims, quoted. Data only: the ledger
(:mod:`flbook.ledger.song`) and the experiments read it."""

from __future__ import annotations

from typing import Any

PAPER = "Song et al. 2025"

TABLE_I: dict[str, Any] = dict(dataset="CIFAR-10 (training set, 32x32)", model="ResNet18", client_optimizer="SGD",
                               client_lr=1e-3, attack_optimizer="Adam", attack_lr=0.1, attack_iterations=1000,
                               labels="known (label inference of Yin et al. / Geng et al. assumed)",
                               n_images=4, bo_trials=50, bo_startup_trials=12)
"""The simulation settings of Song §5.1 and Table I (the BO's 50 trials and 12 initial points from §5.1)."""

CASES: dict[str, tuple[int, int]] = {"case 1": (1, 1), "case 2": (4, 1), "case 3": (1, 4), "case 4": (2, 2)}
"""(E, B) of the four cases of Song §5.2, N = 4 images."""

TABLE_II: dict[str, tuple[float, float]] = {"q_cv": (1.0, 1000.0), "q_bn": (1.0, 1000.0), "q_fc": (1.0, 1000.0),
                                            "q_en": (1.0, 1000.0), "p_mean": (0.0, 0.5), "p_var": (0.0, 0.5)}
"""The search ranges of Q = (q_cv, q_bn, q_fc, q_en, p_mean, p_var) (Song Table II)."""

TABLE_III: dict[str, dict[str, float]] = {
    "case 1": dict(q_cv=519.19, q_bn=802.55, q_fc=42.83, q_en=946.44, p_mean=0.24, p_var=0.07),
    "case 2": dict(q_cv=236.31, q_bn=552.31, q_fc=54.28, q_en=837.80, p_mean=0.11, p_var=0.13),
    "case 3": dict(q_cv=547.17, q_bn=222.48, q_fc=394.39, q_en=899.47, p_mean=0.31, p_var=0.01),
    "case 4": dict(q_cv=655.98, q_bn=692.94, q_fc=283.42, q_en=665.28, p_mean=0.40, p_var=0.33),
}
"""Q tuned by Bayesian optimisation in each case (Song Table III)."""

TABLE_IV: dict[str, dict[str, dict[str, float] | None]] = {
    "case 1": {"DLG": dict(psnr=14.06, ssim=0.534, mse=0.042), "AGIC": dict(psnr=15.89, ssim=0.689, mse=0.028),
               "AWA": dict(psnr=22.40, ssim=0.935, mse=0.006)},
    "case 2": {"DLG": dict(psnr=16.43, ssim=0.739, mse=0.024), "AGIC": dict(psnr=16.07, ssim=0.631, mse=0.035),
               "AWA": dict(psnr=20.40, ssim=0.901, mse=0.009)},
    "case 3": {"DLG": dict(psnr=14.05, ssim=0.505, mse=0.044), "AGIC": dict(psnr=15.63, ssim=0.718, mse=0.029),
               "AWA": dict(psnr=22.47, ssim=0.936, mse=0.006)},
    "case 4": {"DLG": None, "AGIC": dict(psnr=16.41, ssim=0.734, mse=0.025),
               "AWA": dict(psnr=19.68, ssim=0.882, mse=0.011)},
}
"""Song Table IV (ResNet-18, CIFAR-10 32x32, N = 4, 1,000 Adam iterations at 0.1); DLG has a dash in case 4."""

QUOTES: dict[str, str] = {
    "Scenario 1": "since E = 1 and B = 1, the client uses the full-batch gradient descent for one epoch ... the "
                  "attacker can replicate the client's training process (eq. 12-13)",
    "Scenario 2": "the attacker can also obtain the knowledge of G_t in this scenario ... train the model for E "
                  "epochs (eq. 14-15)",
    "Scenario 3": "the reconstructed (X̂, Ŷ) are in the same order as that of the shuffled client's dataset. Hence, "
                  "the attacker can still obtain and replicate the local training process (eq. 16-17)",
    "Scenario 4": "the attacker cannot replicate the client's mini-batch separation when E > 1 due to the randomness "
                  "of the shuffling process (eq. 18)",
    "eq. 19-20": "θ̃_{t,e} = (e/E)(θ_{t+1} - θ_t) + θ_t; Δθ̃_{t,e} = θ̃_{t,e} - θ̃_{t,e-1}",
    "§4.1": "the attacker can use it to represent the unknown intermediate model update Δθ_{t,e} for any epoch; the "
            "attack problem is reduced from Scenario 4 to Scenario 3",
    "eq. 23": "ℓ_Q = Σ_l q^(l) ‖Δθ̂^(l) - Δθ^(l)‖² (the loss (10) with layer weights q^(l) > 0)",
    "eq. 24": "q^(l) = (q_k - 1)/(L_k - 1)(l - 1) + 1 for l = 1..L_k > 1, q_k if L_k = 1, per layer kind",
    "eq. 25-30": "relative errors of the layer means and variances; 𝒫 = 𝒫_mean ∩ 𝒫_var, the ⌈p_mean L⌉ and "
                 "⌈p_var L⌉ layers of largest error; q^(l) = q_en on 𝒫",
    "eq. 39": "EI(Q) = (f_min - μ_Q) Φ((f_min - μ_Q)/σ_Q) + σ_Q φ((f_min - μ_Q)/σ_Q)",
    "Fig. 1": "the Bayesian optimization approach successfully finds a trend of smaller f(Q) values as the trial "
              "count increases (cumulative minimum over 50 trials, four cases)",
    "Table III": "the parameter settings refined by Bayesian optimization for our AWA method in each case",
    "Table IV": "detailed evaluation metrics of the data reconstructed by three data reconstruction methods in four "
                "cases",
    "Table IV order": "in all four cases, our proposed AWA method consistently yields images with substantially "
                      "enhanced resolution ... the consistently highest values of PSNR and SSIM achieved by AWA in "
                      "each case",
    "Table IV case 4": "the PSNR of images reconstructed in Case 4 is found to be comparable to that achieved in the "
                       "first three cases",
    "Fig. 2": "in Case 4 ... AGIC fails to reconstruct images with identifiable objects effectively; AWA "
              "reconstructs images with reasonable resolutions",
    "Fig. 3": "after 3,000 attack iterations the attained SSIM values surpass those presented in Table IV for the "
              "1000-iteration attack",
    "Fig. 4": "our method achieves a satisfactory level of reconstruction, with SSIM values exceeding 0.9 within "
              "1500 attack iterations for all four cases",
    "Fig. 4 case 4": "the outcomes of Case 4 exhibit a marginally inferior performance compared to Cases 1-3 due to "
                     "the need for approximation",
    "§1 contribution 3": "compatible with various neural network architectures, such as CNNs and ResNets; capable of "
                         "reconstructing training data based on the model updates leaked at different stages of the "
                         "training process",
    "§5.2 DLG": "in all the tests, the DLG method utilizes the unweighted loss function (10) for the attack",
}
"""The paper's claims, quoted or closely paraphrased, keyed by result."""
