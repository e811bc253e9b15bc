"""The operator's side of the wallet protocol (protos/jackpot/v1/wallet.proto): a reference
wallet server for the demo and the tests (:mod:`jackpot.wallet.reference`)."""
