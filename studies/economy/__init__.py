"""The economy study: learned tax policies in gather_trade_build, as the AI Economist paper trains them."""
