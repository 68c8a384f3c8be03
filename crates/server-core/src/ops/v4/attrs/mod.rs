//! NFSv4 attributes (RFC 8881 section 5): fattr4 encoding for GETATTR and
//! READDIR, decoding for SETATTR/OPEN/CREATE, comparison for VERIFY.
