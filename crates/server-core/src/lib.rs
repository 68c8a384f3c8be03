//! Sans-IO NFS server core.
