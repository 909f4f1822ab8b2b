"""GAN-BERT Studio core: data, exploration, training and runs, with no UI in it. Entry points call
`core.environment.prepare()` first."""
