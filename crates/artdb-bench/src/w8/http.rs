//! http: W8's connections: artdb's client, or the client it talks to etcd's HTTP/JSON gateway
//! with (keep-alive HTTP/1.1 over one TCP connection, and the base64 the gateway's JSON carries
//! keys and values in), written here so that the benchmark needs no HTTP crate.

use super::ANSWER_TIMEOUT;
use crate::kv::Res;
use artdb_raft::client::Client;
use artdb_raft::wire::Consistency;
use artdb_raft::Operation;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub(super) const BASE64: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(super) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(BASE64[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) fn base64_decode(text: &str) -> Res<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut n: u32 = 0;
    let mut bits = 0;
    for c in text.bytes().filter(|c| *c != b'=') {
        let digit = BASE64
            .iter()
            .position(|d| *d == c)
            .ok_or_else(|| format!("{c:?} is not base64"))?;
        n = (n << 6) | digit as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((n >> bits) as u8);
        }
    }
    Ok(out)
}

/// One keep-alive HTTP/1.1 connection to an etcd member's client URL.
pub(super) struct Http {
    address: String,
    stream: Option<BufReader<TcpStream>>,
}

impl Http {
    pub(super) fn new(address: String) -> Http {
        Http {
            address,
            stream: None,
        }
    }

    /// POSTs `body` to `path`; the status code and the JSON answer.
    pub(super) async fn post(
        &mut self,
        path: &str,
        body: &serde_json::Value,
    ) -> Res<(u16, serde_json::Value)> {
        let result = match tokio::time::timeout(ANSWER_TIMEOUT, self.exchange(path, body)).await {
            Ok(result) => result,
            Err(_) => Err(format!("etcd did not answer {path} within {ANSWER_TIMEOUT:?}").into()),
        };
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    pub(super) async fn exchange(
        &mut self,
        path: &str,
        body: &serde_json::Value,
    ) -> Res<(u16, serde_json::Value)> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let stream = TcpStream::connect(&self.address).await?;
                stream.set_nodelay(true)?;
                self.stream.insert(BufReader::new(stream))
            }
        };
        let body = serde_json::to_vec(body)?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            self.address,
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        stream.get_mut().write_all(&request).await?;
        let mut line = String::new();
        stream.read_line(&mut line).await?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| format!("etcd answered {line:?}, not an HTTP status line"))?;
        let mut length = None;
        let mut chunked = false;
        loop {
            line.clear();
            if stream.read_line(&mut line).await? == 0 {
                return Err("etcd closed the connection in the headers".into());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let name = name.trim().to_ascii_lowercase();
                let value = value.trim();
                if name == "content-length" {
                    length = Some(value.parse::<usize>()?);
                } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let mut answer = Vec::new();
        if chunked {
            loop {
                line.clear();
                stream.read_line(&mut line).await?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)?;
                let mut chunk = vec![0; size + 2];
                stream.read_exact(&mut chunk).await?;
                if size == 0 {
                    break;
                }
                answer.extend_from_slice(&chunk[..size]);
            }
        } else {
            let length = length.ok_or("etcd's answer has no Content-Length")?;
            answer.resize(length, 0);
            stream.read_exact(&mut answer).await?;
        }
        let json = if answer.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&answer)?
        };
        Ok((status, json))
    }

    /// POSTs and fails unless etcd answered 200.
    pub(super) async fn call(
        &mut self,
        path: &str,
        body: serde_json::Value,
    ) -> Res<serde_json::Value> {
        let (status, json) = self.post(path, &body).await?;
        if status != 200 {
            return Err(format!("etcd {path}: {status} {json}").into());
        }
        Ok(json)
    }

    pub(super) async fn put(&mut self, key: &[u8], value: &[u8]) -> Res<()> {
        let body = serde_json::json!({"key": base64_encode(key), "value": base64_encode(value)});
        self.call("/v3/kv/put", body).await.map(drop)
    }

    pub(super) async fn get(&mut self, key: &[u8], stale: bool) -> Res<Option<Vec<u8>>> {
        let body = serde_json::json!({"key": base64_encode(key), "serializable": stale});
        let json = self.call("/v3/kv/range", body).await?;
        match json["kvs"].as_array().and_then(|kvs| kvs.first()) {
            None => Ok(None),
            Some(kv) => Ok(Some(base64_decode(kv["value"].as_str().unwrap_or(""))?)),
        }
    }

    pub(super) async fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        let success: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(key, value)| {
                serde_json::json!({"requestPut": {"key": base64_encode(key),
                                                  "value": base64_encode(value)}})
            })
            .collect();
        let json = self
            .call("/v3/kv/txn", serde_json::json!({"success": success}))
            .await?;
        if json["succeeded"].as_bool() != Some(true) {
            return Err(format!("etcd's transaction did not succeed: {json}").into());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- clients of either system

/// One client connection to a cluster of either system.
pub(super) enum Conn {
    Artdb(Client),
    Etcd(Http),
}

impl Conn {
    pub(super) async fn put(&mut self, key: &[u8], value: &[u8]) -> Res<()> {
        match self {
            Conn::Artdb(client) => client.put(key, value).await.map(drop).map_err(Into::into),
            Conn::Etcd(http) => http.put(key, value).await,
        }
    }

    pub(super) async fn get(&mut self, key: &[u8], stale: bool) -> Res<Option<Vec<u8>>> {
        match self {
            Conn::Artdb(client) => {
                let consistency = if stale {
                    Consistency::Stale
                } else {
                    Consistency::Linearizable
                };
                client.get(key, consistency).await.map_err(Into::into)
            }
            Conn::Etcd(http) => http.get(key, stale).await,
        }
    }

    pub(super) async fn put_all(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) -> Res<()> {
        match self {
            Conn::Artdb(client) => {
                let operations = pairs
                    .iter()
                    .map(|(key, value)| Operation::Put {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect();
                match client.transaction(Vec::new(), operations).await? {
                    true => Ok(()),
                    false => Err("artdb's unconditional transaction did not apply".into()),
                }
            }
            Conn::Etcd(http) => http.put_all(pairs).await,
        }
    }

    /// Reads `key` and fails unless it holds `expected`.
    pub(super) async fn check(&mut self, key: &[u8], expected: &[u8], stale: bool) -> Res<()> {
        match self.get(key, stale).await? {
            Some(value) if value == expected => Ok(()),
            other => Err(format!(
                "read {} ({}): expected {} bytes, got {:?}",
                String::from_utf8_lossy(key),
                if stale { "stale" } else { "linearizable" },
                expected.len(),
                other.map(|v| String::from_utf8_lossy(&v).into_owned())
            )
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_known_encodings() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
        for len in 0..40u8 {
            let bytes: Vec<u8> = (0..len).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
            assert_eq!(base64_decode(&base64_encode(&bytes)).unwrap(), bytes);
        }
        assert!(base64_decode("Zm9*").is_err());
    }
}
