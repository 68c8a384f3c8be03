# Sourced by the result scripts that run nfsx and NFS-Ganesha side by side.
# Needs REPO and NFSX set.
#   start_two_servers DIR PORT: nfsx (its defaults but portmap_port = 0, so
#     port 111 stays rpcbind's) serving DIR/ex on PORT, and NFS-Ganesha 4.3
#     (FSAL_VFS, scripts/ganesha.sh); sets URL[nfsx|ganesha] (NFSv3) and
#     PID[nfsx|ganesha], the servers' processes.
#   stop_two_servers: stops both.
start_two_servers() {
  local dir=$1 port=$2
  mkdir -p "$dir/ex" "$dir/st"
  printf 'portmap_port = 0\n' > "$dir/server.toml"
  (cd "$REPO" && PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh start > /dev/null 2>&1)
  "$NFSX" serve "$dir/ex" --listen "127.0.0.1:$port" --state-dir "$dir/st" --config "$dir/server.toml" --log warn &
  TWO_SERVERS_NFSX=$!
  sleep 2
  declare -gA URL=([nfsx]="nfs://127.0.0.1:$port$dir/ex?version=3" [ganesha]="nfs://127.0.0.1/export?version=3")
  declare -gA PID=([nfsx]=$TWO_SERVERS_NFSX [ganesha]=$(pgrep -f ganesha.nfsd | head -1))
}

stop_two_servers() {
  kill "$TWO_SERVERS_NFSX"
  wait "$TWO_SERVERS_NFSX" 2>/dev/null
  (cd "$REPO" && PEER_DIR=/tmp/nfsx-ganesha scripts/ganesha.sh stop > /dev/null 2>&1)
}
