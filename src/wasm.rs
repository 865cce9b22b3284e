//! The wasm boundary: the `Engine` class the host sees (`js/src/engine.ts` is its contract).
//!
//! This is the only module that knows about JavaScript. It converts values in and out, and
//! turns every engine error into a JavaScript `Error` carrying the engine's message (and, for
//! `d1Setup`, where in the script it failed); all the behaviour lives in `check::Check`.

use js_sys::{Array, ArrayBuffer, Function, Object, Reflect, Uint8Array};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::check::{Check, Traced};
use crate::config::CheckConfig;
use crate::d1::{self, RawResult, Statement, Value};
use crate::error::Error;
use crate::invariant::Violation;
use crate::strategy::{Access, StepOption};
use crate::verdict::Verdict;

// A D1 result object made in one call: setting its eight fields one by one from Rust costs more
// than the statement itself. Parameters cross the other way as one string (see `decode_params`):
// asking JavaScript for each value's type and contents costs two or three calls a value.
#[wasm_bindgen(inline_js = r#"
export function d1Result(columns, rows, changes, lastRowId, rowsRead, rowsWritten, sizeAfter, changedDb) {
  return { columns, rows, changes, lastRowId, rowsRead, rowsWritten, sizeAfter, changedDb };
}
export function encodeParams(params) {
  let out = "";
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (v === null || v === undefined) out += "n";
    else if (typeof v === "string") out += "t" + v.length + ":" + v;
    else if (typeof v === "number") {
      if (Number.isInteger(v) && Math.abs(v) <= 9007199254740992) out += "i" + v + ";";
      else if (Number.isFinite(v)) out += "r" + v + ";";
      else return undefined;
    } else if (typeof v === "boolean") out += v ? "i1;" : "i0;";
    else return undefined;
  }
  return out;
}
export function encodeOptions(options) {
  if (!Array.isArray(options)) return undefined;
  let out = "";
  for (const o of options) {
    if (o === null || typeof o !== "object" || typeof o.label !== "string") return undefined;
    out += "t" + o.label.length + ":" + o.label;
    const inv = o.invocation;
    if (inv === undefined || inv === null) out += "n";
    else if (typeof inv === "string") out += "t" + inv.length + ":" + inv;
    else return undefined;
    const effect = o.effect;
    if (effect === undefined || effect === null) out += "n";
    else if (Number.isInteger(effect) && effect >= 0 && effect <= 4294967295) out += "i" + effect + ";";
    else return undefined;
    out += o.answer === true ? "i1;" : "i0;";
    const footprint = o.footprint;
    if (footprint === undefined || footprint === null) {
      out += "i0;";
      continue;
    }
    if (!Array.isArray(footprint)) return undefined;
    out += "i" + footprint.length + ";";
    for (const entry of footprint) {
      if (entry === null || typeof entry !== "object") return undefined;
      const { resource, write } = entry;
      if (typeof resource !== "string" || typeof write !== "boolean") return undefined;
      out += "t" + resource.length + ":" + resource + (write ? "i1;" : "i0;");
    }
  }
  return out;
}
"#)]
extern "C" {
    /// `options` (`StepOption[]`) as one string in `encodeParams`' form: per option its label,
    /// invocation (or `n`), effect (or `n`), answer (`i1;` or `i0;`), the number of footprint
    /// entries, then each entry's resource and write; `undefined` when an option is malformed,
    /// which `step_options_from_js` then reads field by field to say what is wrong.
    #[wasm_bindgen(js_name = encodeOptions)]
    fn encode_options(options: &JsValue) -> Option<String>;

    /// `params` as one string: per value `n` (null), `i<integer>;`, `r<number>;` or
    /// `t<UTF-16 length>:<text>`; `undefined` when one is of another kind (bytes, a non-finite
    /// number, an object), which `value_from_js` converts or refuses one by one.
    #[wasm_bindgen(js_name = encodeParams)]
    fn encode_params(params: &Array) -> Option<String>;

    #[wasm_bindgen(js_name = d1Result)]
    #[allow(clippy::too_many_arguments)]
    fn d1_result(
        columns: Array,
        rows: Array,
        changes: f64,
        last_row_id: f64,
        rows_read: f64,
        rows_written: f64,
        size_after: Option<f64>,
        changed_db: bool,
    ) -> JsValue;
}

/// The largest integer a JavaScript number holds exactly; integral numbers up to it bind as
/// SQLite INTEGER, as D1 does.
const SAFE_INTEGER_MAX: f64 = 9_007_199_254_740_992.0;

#[wasm_bindgen]
pub struct Engine {
    check: Check,
}

#[wasm_bindgen]
impl Engine {
    #[wasm_bindgen(constructor)]
    pub fn new(config: JsValue) -> Result<Engine, JsError> {
        console_error_panic_hook::set_once();
        let config: CheckConfig = serde_wasm_bindgen::from_value(config)
            .map_err(|e| JsError::new(&format!("invalid engine config: {e}")))?;
        Ok(Engine {
            check: Check::new(config).map_err(js)?,
        })
    }

    /// `label`: how traces name the database (a Durable Object's storage), `D1 <db>` without.
    #[wasm_bindgen(js_name = d1Open)]
    pub fn d1_open(&mut self, db: &str, label: Option<String>) -> Result<(), JsError> {
        self.check.d1_open_labeled(db, label.as_deref()).map_err(js)
    }

    #[wasm_bindgen(js_name = d1Exists)]
    pub fn d1_exists(&self, db: &str) -> bool {
        self.check.d1_exists(db)
    }

    /// A statement that fails throws an `Error` with the engine's message and, as `line` and
    /// `column`, where in `sql` it failed.
    #[wasm_bindgen(js_name = d1Setup)]
    pub fn d1_setup(&mut self, db: &str, sql: &str) -> Result<(), JsValue> {
        self.check.d1_setup(db, sql).map_err(|e| {
            let error: JsValue = js(e.error).into();
            if let Some(at) = e.at {
                let object: &Object = error.unchecked_ref();
                set(object, "line", JsValue::from_f64(at.line as f64));
                set(object, "column", JsValue::from_f64(at.column as f64));
            }
            error
        })
    }

    pub fn seal(&mut self) -> Result<(), JsError> {
        self.check.seal().map_err(js)
    }

    /// The next run's plan, or `undefined` when the check is done.
    #[wasm_bindgen(js_name = nextRun)]
    pub fn next_run(&mut self, elapsed_ms: f64) -> Result<JsValue, JsError> {
        // A float-to-int cast saturates: NaN and negative times become 0.
        let elapsed_ms = elapsed_ms as u64;
        match self.check.next_run(elapsed_ms).map_err(js)? {
            Some(plan) => to_js(&plan),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// `transient` may be left out: an effect without a documented transient error; `lost` too:
    /// one whose transient error never comes after the call took effect.
    pub fn decide(
        &mut self,
        invocation: &str,
        effect: u32,
        label: &str,
        transient: Option<bool>,
        lost: Option<bool>,
    ) -> Result<u8, JsError> {
        let decision = self
            .check
            .decide_offering(
                invocation,
                effect,
                label,
                transient.unwrap_or(false),
                lost.unwrap_or(false),
            )
            .map_err(js)?;
        Ok(decision as u8)
    }

    /// `options`: `StepOption[]`; answers the index of the option to run next.
    pub fn choose(&mut self, options: JsValue) -> Result<u32, JsError> {
        let decoded = encode_options(&options)
            .as_deref()
            .and_then(d1::decode_params)
            .and_then(|values| step_options_from_values(&values));
        if let Some(options) = decoded {
            return Ok(self.check.choose(&options).map_err(js)? as u32);
        }
        let options = step_options_from_js(&options).map_err(|e| {
            JsError::new(&format!(
                "choose takes an array of {{ label, invocation?, effect?, footprint? }}: {e}"
            ))
        })?;
        let chosen = self.check.choose(&options).map_err(js)?;
        Ok(chosen as u32)
    }

    /// The footprint of a D1 statement: `{ resource, write }[]`.
    #[wasm_bindgen(js_name = d1Footprint)]
    pub fn d1_footprint(&self, db: &str, sql: &str) -> Result<JsValue, JsError> {
        let footprint = self.check.d1_footprint(db, sql).map_err(js)?;
        to_js(&footprint)
    }

    pub fn redeliver(&mut self, event: u32, delivery: u32) -> Result<bool, JsError> {
        self.check.redeliver(event, delivery).map_err(js)
    }

    #[wasm_bindgen(js_name = redeliverPlatform)]
    pub fn redeliver_platform(&mut self, name: &str, delivery: u32) -> Result<bool, JsError> {
        self.check.redeliver_platform(name, delivery).map_err(js)
    }

    /// Fills `buf` from the named random stream; wasm-bindgen copies the bytes back into the
    /// caller's array.
    #[wasm_bindgen(js_name = fillRandom)]
    pub fn fill_random(&mut self, stream: &str, buf: &mut [u8]) {
        self.check.fill_random(stream, buf);
    }

    #[wasm_bindgen(js_name = nowMs)]
    pub fn now_ms(&self) -> f64 {
        self.check.now_ms() as f64
    }

    /// The run seed of the run under way, as far as it has gone: for a message about this run
    /// (an invariant that could not judge it) that the user can replay.
    #[wasm_bindgen(js_name = runSeed)]
    pub fn run_seed(&self) -> String {
        self.check.run_seed()
    }

    pub fn trace(&mut self, line: &str) {
        self.check.trace(line);
    }

    /// How far the host has moved the run's clock past the engine's (`nowMs`), for SQL's
    /// `'now'`; the next run starts at 0 again.
    #[wasm_bindgen(js_name = setClockSkew)]
    pub fn set_clock_skew(&mut self, skew_ms: f64) {
        self.check.set_clock_skew(skew_ms.max(0.0) as u64);
    }

    /// `quiet`: the host's own bookkeeping, left out of the trace (see `Check::d1_run_as`).
    #[wasm_bindgen(js_name = d1Run)]
    pub fn d1_run(
        &mut self,
        db: &str,
        sql: &str,
        params: JsValue,
        quiet: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let params = values_from_js(&params)?;
        let result = self
            .check
            .d1_run_as(db, sql, &params, traced(quiet))
            .map_err(js)?;
        Ok(result_to_js(&result))
    }

    #[wasm_bindgen(js_name = d1Batch)]
    pub fn d1_batch(
        &mut self,
        db: &str,
        statements: JsValue,
        quiet: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let statements = statements_from_js(&statements)?;
        let results = self
            .check
            .d1_batch_as(db, &statements, traced(quiet))
            .map_err(js)?;
        Ok(results.iter().map(result_to_js).collect::<Array>().into())
    }

    #[wasm_bindgen(js_name = d1Exec)]
    pub fn d1_exec(
        &mut self,
        db: &str,
        sql: &str,
        quiet: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let count = self.check.d1_exec_as(db, sql, traced(quiet)).map_err(js)?;
        let object = Object::new();
        set(&object, "count", JsValue::from_f64(count as f64));
        Ok(object.into())
    }

    /// `host_violation` is `undefined`, or the first of the host's own invariants that broke:
    /// `{ invariant, message }`.
    #[wasm_bindgen(js_name = endRun)]
    pub fn end_run(&mut self, host_violation: JsValue) -> Result<JsValue, JsError> {
        let host: Option<Violation> = if host_violation.is_undefined() || host_violation.is_null() {
            None
        } else {
            Some(serde_wasm_bindgen::from_value(host_violation).map_err(|e| {
                JsError::new(&format!(
                    "endRun takes {{ invariant, message }} strings or undefined: {e}"
                ))
            })?)
        };
        let end = self.check.end_run(host).map_err(js)?;
        to_js(&end)
    }

    pub fn verdict(&self) -> Result<JsValue, JsError> {
        let verdict = self.check.verdict().map_err(js)?;
        to_js(&verdict)
    }
}

/// Merges the verdicts of the shards of one check (`shard.rs`): a free function, since no
/// engine is needed.
#[wasm_bindgen(js_name = mergeVerdicts)]
pub fn merge_verdicts(verdicts: JsValue) -> Result<JsValue, JsError> {
    let verdicts: Vec<Verdict> = serde_wasm_bindgen::from_value(verdicts)
        .map_err(|e| JsError::new(&format!("mergeVerdicts takes an array of verdicts: {e}")))?;
    let merged = crate::shard::merge_verdicts(&verdicts).map_err(js)?;
    to_js(&merged)
}

thread_local! {
    /// The property names `step_options_from_js` reads, as JavaScript strings made once.
    static OPTION_KEYS: [JsValue; 7] = ["label", "invocation", "effect", "footprint", "resource", "write", "answer"]
        .map(JsValue::from_str);
}

/// `StepOption[]` from `encodeOptions`' values, or `None` if they are not in its form.
fn step_options_from_values(values: &[Value]) -> Option<Vec<StepOption>> {
    let mut values = values.iter();
    let mut steps = Vec::new();
    let text = |value: Option<&Value>| match value {
        Some(Value::Text(text)) => Some(text.clone()),
        _ => None,
    };
    let integer = |value: Option<&Value>| match value {
        Some(Value::Integer(n)) => Some(*n),
        _ => None,
    };
    while let Some(label) = values.next() {
        let Value::Text(label) = label else {
            return None;
        };
        let invocation = match values.next()? {
            Value::Null => None,
            Value::Text(text) => Some(text.clone()),
            _ => return None,
        };
        let effect = match values.next()? {
            Value::Null => None,
            Value::Integer(n) => Some(u32::try_from(*n).ok()?),
            _ => return None,
        };
        let answer = integer(values.next())? == 1;
        let entries = usize::try_from(integer(values.next())?).ok()?;
        let mut footprint = Vec::with_capacity(entries.min(64));
        for _ in 0..entries {
            let resource = text(values.next())?;
            let write = integer(values.next())? == 1;
            footprint.push(Access { resource, write });
        }
        steps.push(StepOption {
            label: label.clone(),
            invocation,
            effect,
            footprint,
            answer,
        });
    }
    Some(steps)
}

/// `StepOption[]` read field by field, for an array `encodeOptions` refused: what is wrong with
/// it, said option by option.
fn step_options_from_js(options: &JsValue) -> std::result::Result<Vec<StepOption>, String> {
    OPTION_KEYS.with(|[label_key, invocation_key, effect_key, footprint_key, resource_key, write_key, answer_key]| {
        let options = options
            .dyn_ref::<Array>()
            .ok_or_else(|| "not an array".to_string())?;
        let absent = |value: &JsValue| value.is_undefined() || value.is_null();
        let mut steps = Vec::with_capacity(options.length() as usize);
        for (at, option) in options.iter().enumerate() {
            let field = |key: &JsValue| {
                Reflect::get(&option, key).map_err(|_| format!("option {at} is not an object"))
            };
            let label = field(label_key)?
                .as_string()
                .ok_or_else(|| format!("option {at}: label must be a string"))?;
            let invocation = field(invocation_key)?;
            let invocation = if absent(&invocation) {
                None
            } else {
                Some(
                    invocation
                        .as_string()
                        .ok_or_else(|| format!("option {at}: invocation must be a string"))?,
                )
            };
            let effect = field(effect_key)?;
            let effect = if absent(&effect) {
                None
            } else {
                match effect.as_f64() {
                    Some(n) if n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0 => {
                        Some(n as u32)
                    }
                    _ => return Err(format!("option {at}: effect must be an integer from 0")),
                }
            };
            let footprint = field(footprint_key)?;
            let footprint = if absent(&footprint) {
                Vec::new()
            } else {
                let entries = footprint
                    .dyn_ref::<Array>()
                    .ok_or_else(|| format!("option {at}: footprint must be an array"))?;
                let mut accesses = Vec::with_capacity(entries.length() as usize);
                for entry in entries.iter() {
                    let get = |key: &JsValue| Reflect::get(&entry, key).unwrap_or(JsValue::UNDEFINED);
                    let (Some(resource), Some(write)) =
                        (get(resource_key).as_string(), get(write_key).as_bool())
                    else {
                        return Err(format!(
                            "option {at}: a footprint entry is {{ resource: string, write: boolean }}"
                        ));
                    };
                    accesses.push(Access { resource, write });
                }
                accesses
            };
            let answer = field(answer_key)?.as_bool().unwrap_or(false);
            steps.push(StepOption {
                label,
                invocation,
                effect,
                footprint,
                answer,
            });
        }
        Ok(steps)
    })
}

fn traced(quiet: Option<bool>) -> Traced {
    if quiet == Some(true) {
        Traced::No
    } else {
        Traced::Yes
    }
}

fn js(error: Error) -> JsError {
    JsError::new(error.message())
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
    value
        .serialize(&serializer)
        .map_err(|e| JsError::new(&format!("cannot convert an engine result: {e}")))
}

fn set(object: &Object, key: &str, value: JsValue) {
    // Defining a property on a fresh plain object cannot fail.
    let defined = Reflect::set(
        object,
        &JsValue::from_str(wasm_bindgen::intern(key)),
        &value,
    );
    debug_assert!(matches!(defined, Ok(true)));
}

/// Converts bound parameters as D1 does: null and undefined are NULL, integral numbers within
/// 2^53 INTEGER, other numbers REAL, strings TEXT, booleans 1 and 0, byte arrays BLOB.
fn value_from_js(value: &JsValue) -> Result<Value, JsError> {
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(number) = value.as_f64() {
        if number.fract() == 0.0 && number.abs() <= SAFE_INTEGER_MAX {
            return Ok(Value::Integer(number as i64));
        }
        return Ok(Value::Real(number));
    }
    if let Some(text) = value.as_string() {
        return Ok(Value::Text(text));
    }
    if let Some(flag) = value.as_bool() {
        return Ok(Value::Integer(i64::from(flag)));
    }
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        return Ok(Value::Blob(bytes.to_vec()));
    }
    if let Some(buffer) = value.dyn_ref::<ArrayBuffer>() {
        return Ok(Value::Blob(Uint8Array::new(buffer).to_vec()));
    }
    let type_name = value.js_typeof().as_string().unwrap_or_default();
    Err(JsError::new(&format!(
        "D1_TYPE_ERROR: Type '{type_name}' not supported for value '{}'",
        js_string(value)
    )))
}

/// JavaScript's `String(value)`, which never throws for the values that reach it here except
/// objects with a throwing `toString`.
fn js_string(value: &JsValue) -> String {
    let string = Reflect::get(&js_sys::global(), &JsValue::from_str("String"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    string
        .and_then(|f| f.call1(&JsValue::UNDEFINED, value).ok())
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "[object]".to_string())
}

fn values_from_js(params: &JsValue) -> Result<Vec<Value>, JsError> {
    if params.is_undefined() || params.is_null() {
        return Ok(Vec::new());
    }
    let Some(array) = params.dyn_ref::<Array>() else {
        return Err(JsError::new("D1 parameters must be an array"));
    };
    if let Some(values) = encode_params(array).as_deref().and_then(d1::decode_params) {
        return Ok(values);
    }
    array.iter().map(|v| value_from_js(&v)).collect()
}

fn statements_from_js(statements: &JsValue) -> Result<Vec<Statement>, JsError> {
    let Some(array) = statements.dyn_ref::<Array>() else {
        return Err(JsError::new("d1Batch takes an array of statements"));
    };
    let mut out = Vec::with_capacity(array.length() as usize);
    for (index, spec) in array.iter().enumerate() {
        let field = |name: &str| Reflect::get(&spec, &JsValue::from_str(name)).ok();
        let Some(sql) = field("sql").and_then(|s| s.as_string()) else {
            return Err(JsError::new(&format!(
                "d1Batch: statement {} has no sql string",
                index + 1
            )));
        };
        let params = values_from_js(&field("params").unwrap_or(JsValue::UNDEFINED))?;
        out.push(Statement { sql, params });
    }
    Ok(out)
}

fn value_to_js(value: &Value) -> JsValue {
    match value {
        Value::Null => JsValue::NULL,
        Value::Integer(i) => JsValue::from_f64(*i as f64),
        Value::Real(r) => JsValue::from_f64(*r),
        Value::Text(t) => JsValue::from_str(t),
        Value::Blob(b) => Uint8Array::from(&b[..]).into(),
    }
}

fn result_to_js(result: &RawResult) -> JsValue {
    let columns: Array = result
        .columns
        .iter()
        .map(|c| JsValue::from_str(wasm_bindgen::intern(c)))
        .collect();
    let rows: Array = result
        .rows
        .iter()
        .map(|row| JsValue::from(row.iter().map(value_to_js).collect::<Array>()))
        .collect();
    d1_result(
        columns,
        rows,
        result.changes as f64,
        result.last_row_id as f64,
        result.rows_read as f64,
        result.rows_written as f64,
        result.size_after.map(|bytes| bytes as f64),
        result.changed_db,
    )
}
