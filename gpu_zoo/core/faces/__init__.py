"""The faces over a batched env that other libraries expect: PettingZoo's parallel and AEC APIs, SB3's VecEnv."""
