# Sourced by run.sh and profile.sh: a throwaway nginx on a free 127.0.0.1 port serving a folder of JPEGs.
#
#   start_nginx <root> <work dir> <nginx binary>   sets PORT and NGINX_PID; the caller kills NGINX_PID on exit

start_nginx() {
    local root=$1 work=$2 nginx=$3
    PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
    mkdir -p "$work/logs" "$work/tmp"
    cat >"$work/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
    default_type image/jpeg;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path $work/tmp;
    proxy_temp_path $work/tmp;
    fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp;
    scgi_temp_path $work/tmp;
    types { image/jpeg jpg; }
    server {
        listen 127.0.0.1:$PORT;
        root $root;
    }
}
EOF
    "$nginx" -p "$work" -c "$work/nginx.conf" &
    NGINX_PID=$!
    for _ in $(seq 50); do
        curl -fs -o /dev/null "http://127.0.0.1:$PORT/small/0000.jpg" 2>/dev/null && break
        sleep 0.1
    done
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/photo/199.jpg" || {
        echo "nginx did not serve the inputs:" >&2
        cat "$work/logs/error.log" >&2
        exit 1
    }
}
