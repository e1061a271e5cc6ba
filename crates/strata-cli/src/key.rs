//! `strata key`: encode, decode and stripe keys.

use clap::{Args, Subcommand, ValueEnum};
use strata_key::codec::native::{decode_with_orders, NativeCodec, Order};
use strata_key::json::{key_from_json, key_to_json, tuple_to_json, OrderFlags};
use strata_key::TupleCodec;

use crate::lines::{utf8, LineError, Lines};
use crate::output::Out;
use crate::CliError;

/// Arguments of `strata key`.
#[derive(Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Encode a tuple (a JSON array) and print its lowercase hex. Without TUPLE, encode one JSON
    /// array per stdin line.
    Encode {
        #[command(flatten)]
        codec: CodecArgs,
        /// The tuple, as a JSON array (typed values as objects: {"t":"bytes","hex":"00ff"}). With
        /// the native codec a top-level typed object may say its order, which overrides
        /// --schema: {"t":"int","v":"5","desc":true}, {"t":"null","nulls":"last"}.
        tuple: Option<String>,
    },
    /// Decode a hex key and print the tuple as a JSON array. Without HEX, decode one hex string
    /// per stdin line. Native elements stored descending, and NULLs stored nulls-last, are
    /// printed as typed objects with "desc": true / "nulls": "last", so that `key encode` of
    /// the output gives the same key back.
    Decode {
        #[command(flatten)]
        codec: CodecArgs,
        /// Print every element in the typed form.
        #[arg(long)]
        typed: bool,
        /// The key in hex.
        hex: Option<String>,
    },
    /// Print the KeystoneDB stripe (crc32 % 256) of a partition key.
    Stripe {
        /// The partition key (UTF-8, or hex with --hex).
        pk: String,
        /// PK is hex.
        #[arg(long)]
        hex: bool,
    },
}

#[derive(Args)]
struct CodecArgs {
    /// The codec.
    #[arg(long, value_enum, default_value_t = CodecName::Native)]
    codec: CodecName,
    /// Field specs, comma separated: `type[:desc][:nulls_last]` (required for skv; for native
    /// only the modifiers matter and the type may be omitted or `any`).
    #[arg(long)]
    schema: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum CodecName {
    Native,
    Centidb,
    Fdb,
    Skv,
}

fn native_orders(schema: &str) -> Result<Vec<Order>, CliError> {
    schema
        .split(',')
        .enumerate()
        .map(|(i, spec)| {
            let mut o = Order::default();
            for (j, part) in spec.split(':').map(str::trim).enumerate() {
                match part {
                    "desc" => o.descending = true,
                    "asc" => o.descending = false,
                    "nulls_last" => o.nulls_last = true,
                    "nulls_first" => o.nulls_last = false,
                    _ if j == 0 => {} // a type name: native keys are self-describing
                    other => {
                        return Err(CliError::input(format!(
                            "--schema field {i}: unknown modifier {other:?} (expected desc, asc, nulls_last, nulls_first)"
                        )))
                    }
                }
            }
            Ok(o)
        })
        .collect()
}

fn make_codec(args: &CodecArgs) -> Result<Box<dyn TupleCodec>, CliError> {
    Ok(match args.codec {
        CodecName::Native => Box::new(match &args.schema {
            Some(s) => NativeCodec::with_orders(native_orders(s)?),
            None => NativeCodec::new(),
        }),
        CodecName::Centidb => Box::new(strata_key::codec::centidb::CentidbCodec::new()),
        CodecName::Fdb => Box::new(strata_key::codec::fdb::FdbCodec::new()),
        CodecName::Skv => {
            let s = args.schema.as_deref().ok_or_else(|| {
                CliError::input("--codec skv needs --schema (e.g. 'string,int32:desc')")
            })?;
            let schema = strata_key::codec::skv::SkvSchema::parse(s)
                .map_err(|e| CliError::input(format!("--schema: {e}")))?;
            Box::new(strata_key::codec::skv::SkvCodec::new(schema))
        }
    })
}

/// Runs `f` on the argument, or on every stdin line; prints one output line per input.
fn each_input(
    arg: Option<String>,
    mut f: impl FnMut(&str) -> Result<String, String>,
) -> Result<u8, CliError> {
    let mut out = Out::stdout();
    match arg {
        Some(a) => out.line(f(&a).map_err(CliError::input)?)?,
        None => {
            // Read as bytes, each line at most 16 MiB: a bad line is an error naming it, after
            // the outputs of the lines before it.
            let mut input = Lines::new(std::io::stdin().lock());
            loop {
                let (n, line) = match input.next_line() {
                    Ok(Some(l)) => l,
                    Ok(None) => break,
                    Err(e @ LineError::TooLong { .. }) => {
                        return Err(CliError::input(format!("stdin {e}")))
                    }
                    Err(e @ LineError::Io { .. }) => {
                        return Err(CliError::failure(format!("stdin {e}")))
                    }
                };
                let text = utf8(line, n).map_err(|m| CliError::input(format!("stdin {m}")))?;
                let r = f(text.trim_end_matches('\r'))
                    .map_err(|e| CliError::input(format!("stdin line {n}: {e}")))?;
                out.line(r)?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}

/// Runs `strata key`.
pub fn run(args: KeyArgs) -> Result<u8, CliError> {
    match args.command {
        KeyCommand::Encode { codec, tuple } => {
            let c = make_codec(&codec)?;
            let schema_orders = match (codec.codec, &codec.schema) {
                (CodecName::Native, Some(s)) => native_orders(s)?,
                _ => Vec::new(),
            };
            each_input(tuple, |text| {
                let j: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
                let (t, flags) = key_from_json(&j).map_err(|e| format!("invalid tuple at {e}"))?;
                let k = if flags.iter().all(OrderFlags::is_empty) {
                    c.encode(&t)
                } else if let CodecName::Native = codec.codec {
                    let orders = flags
                        .iter()
                        .enumerate()
                        .map(|(i, f)| f.over(schema_orders.get(i).copied().unwrap_or_default()))
                        .collect();
                    NativeCodec::with_orders(orders).encode(&t)
                } else {
                    return Err(
                        "\"desc\"/\"nulls\" in the JSON apply to --codec native only (use --schema)"
                            .to_owned(),
                    );
                };
                Ok(hex::encode(k.map_err(|e| format!("cannot encode: {e}"))?))
            })
        }
        KeyCommand::Decode { codec, typed, hex } => {
            let c = make_codec(&codec)?;
            let native = matches!(codec.codec, CodecName::Native);
            each_input(hex, |text| {
                let bytes = hex::decode(text.trim()).map_err(|e| format!("invalid hex: {e}"))?;
                // Decoding with the codec checks the key against --schema, if any.
                let t = c.decode(&bytes).map_err(|e| e.to_string())?;
                if native {
                    let items = decode_with_orders(&bytes).map_err(|e| e.to_string())?;
                    Ok(key_to_json(&items, typed).to_string())
                } else {
                    Ok(tuple_to_json(&t, typed).to_string())
                }
            })
        }
        KeyCommand::Stripe { pk, hex } => {
            let bytes = if hex {
                hex::decode(pk.trim()).map_err(|e| CliError::input(format!("invalid hex: {e}")))?
            } else {
                pk.into_bytes()
            };
            let mut out = Out::stdout();
            out.line(strata_key::keystone::stripe(&bytes))?;
            out.flush()?;
            Ok(0)
        }
    }
}
