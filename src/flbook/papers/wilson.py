"""Wilson et al. 2025 as the paper reports it: its settings (§4 and App. A-F) and its claims,
quoted. Data only: the ledger (:mod:`flbook.ledger.wilson`) and the experiments read it."""

from __future__ import annotations

from typing import Any

PAPER = "Wilson et al. 2025"

SETTINGS: dict[str, dict[str, Any]] = {
    "main (§4, Fig. 4-5)": dict(model="LeNet5 (also ResNet9/18)", data="ImageNet 128x128 and MNIST", clients=[2, 4, 8],
                                images_per_client=16, local_iterations=3, fl_lr=0.03,
                                attack="L2 update matching (eq. 3), step size 0.1, bicubic dummy x4",
                                attack_round="after the first FL round (untrained model)", metric="LPIPS (also SSIM)"),
    "Fig. 6 left": dict(vary="client batch size", clients="several", trend="worse with larger batches"),
    "Fig. 6 right": dict(vary="local iterations", clients="several",
                         trend="worse with more local iterations when the number of clients is large"),
    "App. B": dict(vary="guessed global learning rate; guessed N",
                   trend="quality degrades fast as the guess departs from the truth; search picks the truth"),
    "App. D": dict(uneven=[21, 11], even=16, clients=[2, 4, 6, 8], trend="no difference"),
    "App. E": dict(vary="inversion learning rate", fl_lr=0.03, trend="insensitive within a reasonable range"),
    "App. F": dict(clients=[2, 4, 6, 8], vary="local iterations",
                   trend="the upper bound (true K clients) is unaffected by τ; the gap to the super-client grows "
                         "with K and τ"),
    "Lemma 1 (App. A)": dict(fl_lr=0.003, claim="E[δ] = τ(τ-1)/2 η² (K-1)/N Cov(J,g) + O(η³)"),
}
"""Wilson et al.'s settings and reported trends, per experiment (recorded in ``part4_factors.json``)."""

CLIENTS_MAIN = (2, 4, 8)
"""§4 / Fig. 4-5 — numbers of clients of the main results (16 images each, 3 local iterations)."""

IMAGES_PER_CLIENT = 16

LOCAL_ITERATIONS = 3

FL_LR = 0.03
"""App. E — "the FL learning rate, used to update the global model, is fixed at 0.03"."""

ATTACK_LR = 0.1
"""§4 — "The attacker uses a learning rate of 0.1 to optimize the dummy data"."""

UNEVEN_SPLIT = (21, 11)
"""App. D — half the clients hold 21 images, half 11 (average 16)."""

FIG7_LPIPS_GAIN_PERCENT = (20, 30)
"""§4, Fig. 7 — "directly postprocessing the raw reconstructed images results in a 20-30% improvement in LPIPS for
systems with 2-8 clients"."""

DUMMY_SCALE_FACTOR = 4
"""§4 — "the attacker encodes its dummy data through bicubic sampling with a scale factor of 4" (32x32 dummies of
128x128 images, §4 Fig. 2)."""

LEMMA1 = "E[δ(τ)] ∝ η² τ(τ-1)(K-1)/N (App. A, eq. 31: the factor is τ(τ-1)/2 · η² · (K-1)/N · Cov(J, g))"

QUOTES: dict[str, str] = {
    "eq. 1-2": "W^(t+1) = W^(t) - η_g/N Σ_k Δ_k, Δ_k = Σ_u Σ_i ∇ℓ(W_k^(t,u); X_k,i, Y_k,i): each image's gradient "
               "weighted equally in the global update",
    "eq. 3": "the attacker approximates the global model update as that of a single super-client; Remark 1: as the "
             "clients train beyond the first local iteration, their starting points for computing gradients "
             "increasingly diverge, worsening the approximation",
    "Lemma 1": "the expected difference between the FedAvg global update and the single super-client approximated "
               "update E[δ(τ)] is proportional to η_g² τ(τ-1)(K-1)/N",
    "Remark 2": "when the number of clients is held constant, increasing the total number of training images "
                "reduces the expected divergence",
    "Fig. 4": "the images remain high quality even when the attack is performed against multiple clients (2, 4 and "
              "8 clients, 16 images each, 3 local iterations)",
    "Fig. 5": "a gradual decline in image reconstruction quality, measured by LPIPS and SSIM, as the number of "
              "clients increases; consistent across a range of global models",
    "Fig. 6 left": "larger client batch sizes lead to worse reconstruction quality",
    "Fig. 6 right": "increasing the number of local iterations leads to worse reconstructions when the number of "
                    "clients is large",
    "Fig. 7": "directly postprocessing the raw reconstructed images results in a 20-30% improvement in LPIPS for "
              "systems with 2-8 clients",
    "Fig. 2": "our direct postprocessing method increases the resolution and simultaneously denoises the images "
              "while maintaining pixel-level correctness",
    "Fig. 3": "after some optimal epoch number the reconstructed image strongly resembles the target; beyond this "
              "point, further optimization may produce blurry images due to overfitting",
    "Fig. 8": "our direct postprocessing produces reconstructions more recognizable than the ROG GAN, but worse "
              "LPIPS and SSIM due to blurring",
    "Fig. 9": "on MNIST, the attack with MDE reconstructs images qualitatively more similar to the ground truth than "
              "FedInverse's MI and MI-HSIC",
    "Fig. 10": "with more than 8 clients, some reconstructed images remain high quality while others exhibit "
               "significant degradation (16 clients)",
    "App. B lr": "reconstruction quality degrades rapidly as the guessed and true learning rates diverge; the "
                 "attacker uses its own training images to evaluate reconstruction quality and refine its guess",
    "App. B N": "the attacker can search for N and decide on the best guess leading to a successful recovery of the "
                "attacker's own training images",
    "App. C": "Table 1: the assumptions of the attack compared with ROG, DLG and iDLG",
    "App. D": "negligible differences in reconstruction quality between the uneven (21 / 11) and even (16) systems, "
              "2 to 8 clients",
    "App. E": "only minor differences in image reconstruction quality across different [inversion] learning rates; "
              "robust as long as the inversion learning rate is within a reasonable range",
    "App. F upper": "explicit multi-client simulation enables the attack to be unaffected by more local iterations",
    "App. F gap": "the gap between the proposed attack and the upper bound increases with more clients and local "
                  "iterations",
    "App. G": "our direct postprocessor has higher (worse) LPIPS than ROG's GAN; SSIM remains comparable",
    "SSIM": "SSIM, a metric that does not penalize blurriness as much as LPIPS (§4); SSIM, less sensitive to "
            "blurring, remains comparable across both approaches (Fig. 15)",
    "x4": "the attacker encodes its dummy data through bicubic sampling with a scale factor of 4 (§4); the raw "
          "reconstructed images are 32x32 pixels compared to the 128x128 ground-truth images (Fig. 2)",
    "App. H": "Figs. 16-23: reconstructions with 8, 32, 64 images per client, 1, 5, 8 local iterations, ResNet9 and "
              "ResNet18",
    "LPIPS": "we use LPIPS as the primary metric ... though we observe similar trends for SSIM and PSNR/MSE",
}
"""The paper's claims, quoted or closely paraphrased, keyed by result."""
