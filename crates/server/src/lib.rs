//! nfsx server transport.
