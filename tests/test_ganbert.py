"""GAN-BERT's loss terms on hand-set logits, the oversampling rule, and the generators."""

from __future__ import annotations

import math

import pytest
import torch

from core.train import TrainConfig
from core.train.methods.ganbert import BowGenerator, Discriminator, NoiseGenerator, gan_losses
from core.train.methods.presets import repeats_for, sizes_for


def test_loss_terms_on_hand_set_logits():
    # k = 2 real classes + fake. Row 0: labeled class 0; row 1: unlabeled.
    real_logits = torch.tensor([[math.log(6.0), math.log(2.0), math.log(2.0)],
                                [0.0, 0.0, math.log(2.0)]])
    fake_logits = torch.tensor([[0.0, 0.0, math.log(2.0)], [0.0, 0.0, math.log(6.0)]])
    features = torch.zeros(2, 3)
    losses = gan_losses(real_logits, features, fake_logits, features + 1.0, labels=torch.tensor([0, -1]),
                        label_mask=torch.tensor([1.0, 0.0]))
    # supervised: softmax over the 2 real logits of row 0 = 6/8 for class 0
    assert losses.d_supervised.item() == pytest.approx(-math.log(6 / 8), rel=1e-5)
    # p_fake(real) = 2/10 and 2/4: -mean log(1 - p)
    assert losses.d_real.item() == pytest.approx(-(math.log(0.8) + math.log(0.5)) / 2, rel=1e-5)
    # p_fake(fake) = 2/4 and 6/8
    assert losses.d_fake.item() == pytest.approx(-(math.log(0.5) + math.log(0.75)) / 2, rel=1e-5)
    assert losses.g_adversarial.item() == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 2, rel=1e-5)
    assert losses.g_feature_matching.item() == pytest.approx(1.0)
    assert losses.d.item() == pytest.approx((losses.d_supervised + losses.d_real + losses.d_fake).item())
    assert losses.g.item() == pytest.approx((losses.g_adversarial + losses.g_feature_matching).item())


def test_supervised_term_is_zero_without_labels():
    logits = torch.randn(4, 4, requires_grad=True)
    losses = gan_losses(logits, torch.zeros(4, 2), logits, torch.zeros(4, 2), torch.full((4,), -1), torch.zeros(4))
    assert losses.d_supervised.item() == 0.0
    losses.d.backward()  # still differentiable
    assert torch.isfinite(logits.grad).all()


@pytest.mark.parametrize("fraction, copies", [(0.01, 6), (0.05, 4), (0.1, 3), (0.5, 1), (1.0, 1), (0.3, 1)])
def test_labeled_rows_are_repeated_log2_inverse_fraction_times(fraction, copies):
    assert repeats_for(fraction) == copies


def test_discriminator_has_k_plus_one_logits_and_exposes_features():
    d = Discriminator(16, [8, 4], num_labels=6)
    logits, features = d(torch.randn(3, 16))
    assert logits.shape == (3, 7) and features.shape == (3, 4)


def test_preset_sizes():
    for preset in ("studio", "tf", "notebook"):  # one hidden layer of the backbone's size, as both codes
        assert sizes_for(TrainConfig.of("ganbert", gan_preset=preset), 384) == ([384], [384], "uniform")
    seed_report = TrainConfig.of("ganbert", gan_preset="seed-report")
    assert sizes_for(seed_report, 768) == ([512, 256, 256], [256], "gaussian")


def test_a_config_written_with_the_old_official_preset_reads_as_studio():
    raw = TrainConfig(method="ganbert").to_json().replace('"gan_preset": "studio"', '"gan_preset": "official"')
    assert TrainConfig.from_json(raw).params.gan_preset == "studio"


def test_noise_generator_distributions():
    torch.manual_seed(0)
    uniform = NoiseGenerator(100, [8], 5, "uniform").sample_noise(2000, torch.device("cpu"))
    gaussian = NoiseGenerator(100, [8], 5, "gaussian").sample_noise(2000, torch.device("cpu"))
    assert uniform.min() >= 0 and uniform.max() <= 1
    assert gaussian.min() < -2 and abs(gaussian.mean().item()) < 0.05


def test_bow_generator_averages_embeddings_of_a_subset_of_real_tokens():
    torch.manual_seed(0)
    emb = torch.eye(6)  # token i embeds to the unit vector e_i
    bags = torch.tensor([[1, 2, 0, 0], [3, 4, 5, 0]])
    g = BowGenerator(noise_dim=4, hidden=[8], output_dim=10, word_embeddings=emb, bags=bags,
                     bag_lengths=torch.tensor([2, 3]), keep=0.5)
    bows = g.bag_of_words(500)
    assert torch.allclose(bows.sum(1), torch.ones(500))  # a mean of one-hot vectors
    used = (bows > 0).any(0)
    assert used[1:6].all() and not used[0]  # only real tokens, never the padding id
    assert g(7, torch.device("cpu")).shape == (7, 10)
    assert not any(k.startswith(("embeddings", "bags")) for k in g.state_dict())  # rebuilt, never saved


def test_the_cpu_dropout_drops_its_share_keeps_the_expectation_and_is_off_in_eval():
    from core.train.methods.ganbert import Dropout

    x = torch.ones(512, 4608)
    layer = Dropout(0.2).train()
    torch.manual_seed(0)
    y = layer(x)
    kept = (y > 0).float().mean().item()
    assert abs(kept - (1 - 51 / 256)) < 0.005  # the drop share, rounded to 1/256
    assert abs(y.mean().item() - 1.0) < 0.01
    assert torch.unique(y).tolist() == pytest.approx([0.0, 1 / (1 - 51 / 256)])
    torch.manual_seed(0)
    assert torch.equal(layer(x), y)  # seeded like every other draw
    assert torch.equal(layer.eval()(x), x)
    bits = (Dropout(0.5).train()(x) > 0).float()
    assert abs(bits.mean(0).std().item() - 0.5 / 512 ** 0.5) < 0.01  # no column pattern: bytes are independent
