"""The display service: pot updates and awards in, jackpot signs (gRPC stream and web page) out."""
