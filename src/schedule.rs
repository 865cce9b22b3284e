//! Schedules and their text form, the run seed.
//!
//! A schedule says everything that distinguishes one run from another: the base seed of the
//! random streams, which events the driver delivers, which faults fire where, and how many
//! redeliveries a client gets. Printed as a run seed, it replays that run exactly:
//!
//! ```text
//! <base seed, 16 hex digits>:<events>:<faults>:<redeliveries max>
//! 9f3c2a1b7d4e5f60:2:A2.1@0:3
//! ```
//!
//! Events are 1-based event indexes joined by `,`. Faults are `-` when there are none, else
//! `A<invocation>@<effect>` (crash_after), `B<invocation>@<effect>` (crash_before) or
//! `T<invocation>@<effect>` (transient_error) joined by `,`. An invocation of a driver event has
//! its event name replaced by the event's 1-based index: `req-2#1` is `2.1` and the callee
//! invocation `req-2#1/0` is `2.1/0`. Any other invocation is work the platform made (a queue
//! batch's delivery `batch-1#1`, an alarm's `alarm-2#1`): it is written `~` and the id with
//! every byte outside `[A-Za-z0-9._#/-]` percent-encoded, so that the seed's separators (`:`,
//! `,`, `@`) and `~`, `%` never appear raw: `batch-1#1/0` is `~batch-1#1/0`. An empty event list
//! is written `-` too. Labels are not part of the run seed.
//!
//! With concurrent invocations a fifth field lists, in order, the scheduling choices that were
//! not the default (the default continues the invocation that ran the last step, else takes
//! the first option): `<default step>=<step taken>` joined by `,`, a step being an invocation
//! written as in faults, with `@<effect>` for an effect, `@<effect>+` for the arrival of that
//! effect's answer, and without either for a delivery. So `1.1@1=2.1` reads "instead of
//! req-1#1's effect #1, deliver req-2#1". Steps are named, not numbered, so that a choice
//! survives the removal of an unrelated event while shrinking. A run without such choices has
//! no fifth field, so every run seed of a check without concurrency reads as before, and
//! four-field seeds replay with default choices. A run in which every binding call's answer
//! was a step of its own (`split_answers`) starts its fifth field with `+`: `…:3:+1.1@0+=2.1`,
//! or `…:3:+` without choices.

use std::fmt;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The invocation dies at the effect; the effect never happens.
    CrashBefore,
    /// The effect happens; the invocation dies before it sees the result.
    CrashAfter,
    /// The effect does not happen and the call fails with the binding's documented transient
    /// error (the host raises it); the invocation lives on and may retry.
    Transient,
    /// The effect happens, and the call still fails with that error: the answer was lost on
    /// the way back, so a retry repeats what already happened.
    LostResponse,
}

impl FaultKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::CrashBefore => "crash_before",
            FaultKind::CrashAfter => "crash_after",
            FaultKind::Transient => "transient_error",
            FaultKind::LostResponse => "lost_response",
        }
    }

    fn letter(self) -> char {
        match self {
            FaultKind::CrashBefore => 'B',
            FaultKind::CrashAfter => 'A',
            FaultKind::Transient => 'T',
            FaultKind::LostResponse => 'L',
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fault at one effect of one invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    /// The invocation id as the host names it: `req-2#1`, or `req-2#1/0` for a callee.
    pub invocation: String,
    /// The index of the driver event the invocation belongs to (derived from `invocation`,
    /// kept so that the shrinker can drop an event's faults with the event); `None` for work
    /// the platform made (`batch-1#1`), whose faults match by the full id.
    pub event: Option<u32>,
    pub effect: u32,
    /// What the effect is (`Service:PAYMENTS charge`), for reports; empty when decoded.
    pub label: String,
}

/// A step as a schedule names it: the invocation, and the effect it performs (none for a
/// delivery), or, with `answer`, the effect whose answer reaches the invocation (written
/// `@<effect>+`). An option without an invocation is named by its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub invocation: String,
    pub effect: Option<u32>,
    pub answer: bool,
}

impl Step {
    pub fn of(option: &crate::strategy::StepOption) -> Self {
        Self {
            invocation: option.process().to_string(),
            effect: option.effect,
            answer: option.answer,
        }
    }

    pub fn is(&self, option: &crate::strategy::StepOption) -> bool {
        self.invocation == option.process()
            && self.effect == option.effect
            && self.answer == option.answer
    }
}

/// A scheduling choice that differs from the default: where the default step was `instead`,
/// the step `take` ran. Without `instead` (written `*`; the shrinker makes such choices when
/// it removes the event of the default step) it applies where `take` is first pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub instead: Option<Step>,
    pub take: Step,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub base_seed: u64,
    /// Indexes into the configured events, ascending, without duplicates.
    pub events: Vec<u32>,
    pub faults: Vec<Fault>,
    pub redeliveries_max: u32,
    /// In the order the run made them.
    pub choices: Vec<Choice>,
    /// Whether every binding call's answer was a step of its own (the host's `answers: "all"`),
    /// not only those of calls made in a Durable Object: written `+` at the head of the fifth
    /// field.
    pub split_answers: bool,
}

/// Where an invocation id of a driver event splits: the event's index, the delivery, and the
/// nested effect path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationId<'a> {
    pub event: u32,
    pub delivery: u32,
    /// The `/<effect>` segments after the delivery, with their slashes, e.g. `/0/2`.
    pub nested: &'a str,
}

/// Upper bound on the length of an invocation id, so that a run seed stays printable.
pub const INVOCATION_ID_MAX: usize = 1_000;

/// Parses an invocation id. An id whose leading name (before `#`) is a driver event must be
/// `<event name>#<delivery>(/<effect>)*` and answers `Some`; any other non-empty id is work the
/// platform made and answers `None`.
pub fn parse_invocation<'a>(
    invocation: &'a str,
    events: &[String],
) -> Result<Option<InvocationId<'a>>> {
    let bad = |why: &str| {
        Error::new(format!(
            "invocation id '{invocation}' is malformed: {why} (expected <event>#<delivery>, \
             optionally followed by /<effect> segments)"
        ))
    };
    if invocation.is_empty() {
        return Err(bad("it is empty"));
    }
    if invocation.len() > INVOCATION_ID_MAX {
        return Err(bad(&format!("it is longer than {INVOCATION_ID_MAX} bytes")));
    }
    let Some((name, rest)) = invocation.split_once('#') else {
        if events.iter().any(|e| e == invocation) {
            return Err(bad("no '#'"));
        }
        return Ok(None);
    };
    let Some(event) = events.iter().position(|e| e == name) else {
        return Ok(None);
    };
    let (delivery_text, nested) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let delivery =
        parse_number(delivery_text).ok_or_else(|| bad("the delivery is not a number"))?;
    if delivery == 0 {
        return Err(bad("deliveries count from 1"));
    }
    for segment in nested.split('/').skip(1) {
        parse_number(segment).ok_or_else(|| bad("an effect segment is not a number"))?;
    }
    Ok(Some(InvocationId {
        event: u32::try_from(event).map_err(|_| bad("too many events"))?,
        delivery,
        nested,
    }))
}

/// A decimal u32 without sign, spaces or leading zeros (so that every number has one spelling
/// and encode∘decode is the identity on run seeds).
fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if text.len() > 1 && text.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

/// Bytes a platform invocation id keeps raw in a run seed; none of them separates fields.
fn is_raw(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-' | b'#' | b'/')
}

fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if is_raw(byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Reverses `percent_encode`, accepting only its own spelling (uppercase hex, raw bytes never
/// encoded), so that every id has one form in a run seed.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            if !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
            {
                return None;
            }
            let decoded = u8::from_str_radix(hex, 16).ok()?;
            if is_raw(decoded) {
                return None;
            }
            out.push(decoded);
            at += 3;
        } else if is_raw(byte) {
            out.push(byte);
            at += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

impl Schedule {
    /// The run seed. Faults are written with their event index, so the configured event names
    /// are not needed; `invocation` must parse, which `Check` guarantees when it records them.
    pub fn encode(&self, events: &[String]) -> String {
        let event_list = if self.events.is_empty() {
            "-".to_string()
        } else {
            join(self.events.iter().map(|e| (e + 1).to_string()))
        };
        let fault_list = if self.faults.is_empty() {
            "-".to_string()
        } else {
            join(self.faults.iter().map(|fault| {
                let invocation = encode_invocation(&fault.invocation, events);
                format!("{}{invocation}@{}", fault.kind.letter(), fault.effect)
            }))
        };
        let marker = if self.split_answers { "+" } else { "" };
        let choices = if self.choices.is_empty() {
            if self.split_answers {
                ":+".to_string()
            } else {
                String::new()
            }
        } else {
            let step = |step: &Step| {
                let invocation = encode_invocation(&step.invocation, events);
                match step.effect {
                    Some(effect) if step.answer => format!("{invocation}@{effect}+"),
                    Some(effect) => format!("{invocation}@{effect}"),
                    None => invocation,
                }
            };
            let items = join(self.choices.iter().map(|c| {
                let instead = c.instead.as_ref().map_or_else(|| "*".to_string(), step);
                format!("{instead}={}", step(&c.take))
            }));
            format!(":{marker}{items}")
        };
        format!(
            "{:016x}:{}:{}:{}{choices}",
            self.base_seed, event_list, fault_list, self.redeliveries_max
        )
    }

    /// Parses a run seed for a check whose events are `events`.
    pub fn decode(text: &str, events: &[String]) -> Result<Schedule> {
        let bad = |why: String| Error::new(format!("run seed '{text}' is malformed: {why}"));
        let parts: Vec<&str> = text.trim().split(':').collect();
        let (seed_text, events_text, faults_text, redeliveries_text, choices_text) = match parts[..]
        {
            [a, b, c, d] => (a, b, c, d, None),
            [a, b, c, d, e] => (a, b, c, d, Some(e)),
            _ => {
                return Err(bad(format!(
                    "expected 4 or 5 fields separated by ':' \
                     (seed:events:faults:redeliveries[:choices]), found {}",
                    parts.len()
                )))
            }
        };
        if seed_text.len() != 16 || !seed_text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!(
                "the base seed '{seed_text}' is not 16 hex digits"
            )));
        }
        let base_seed = u64::from_str_radix(seed_text, 16)
            .map_err(|_| bad(format!("the base seed '{seed_text}' is not hex")))?;

        let mut kept: Vec<u32> = Vec::new();
        if events_text != "-" {
            for item in events_text.split(',') {
                let number = parse_number(item)
                    .ok_or_else(|| bad(format!("event '{item}' is not a number")))?;
                if number == 0 || number as usize > events.len() {
                    return Err(bad(format!(
                        "event {number} does not exist (this check has {} events)",
                        events.len()
                    )));
                }
                let index = number - 1;
                if kept.last().is_some_and(|last| *last >= index) {
                    return Err(bad("events must be ascending without repeats".into()));
                }
                kept.push(index);
            }
        }

        let mut faults: Vec<Fault> = Vec::new();
        if faults_text != "-" {
            for item in faults_text.split(',') {
                let fault = decode_fault(item, events).map_err(bad)?;
                if let Some(event) = fault.event.filter(|e| !kept.contains(e)) {
                    return Err(bad(format!(
                        "fault '{item}' is in event {} which the run does not deliver",
                        event + 1
                    )));
                }
                if faults
                    .iter()
                    .any(|f| f.invocation == fault.invocation && f.effect == fault.effect)
                {
                    return Err(bad(format!("fault '{item}' appears twice")));
                }
                faults.push(fault);
            }
        }

        let redeliveries_max = parse_number(redeliveries_text).ok_or_else(|| {
            bad(format!(
                "redeliveries '{redeliveries_text}' is not a number"
            ))
        })?;
        let mut choices: Vec<Choice> = Vec::new();
        let (split_answers, choices_text) = match choices_text.map(|text| text.strip_prefix('+')) {
            Some(Some(rest)) => (true, Some(rest).filter(|rest| !rest.is_empty())),
            _ => (false, choices_text),
        };
        if let Some(text) = choices_text {
            for item in text.split(',') {
                let Some((instead, take)) = item.split_once('=') else {
                    return Err(bad(format!(
                        "choice '{item}' is not <default step>=<step taken>"
                    )));
                };
                let step = |text: &str| -> std::result::Result<Step, String> {
                    let (invocation, effect, answer) = match text.rsplit_once('@') {
                        Some((invocation, effect)) => {
                            let (effect, answer) = match effect.strip_suffix('+') {
                                Some(effect) => (effect, true),
                                None => (effect, false),
                            };
                            let effect = parse_number(effect).ok_or_else(|| {
                                format!("choice '{item}' has effect '{effect}', not a number")
                            })?;
                            (invocation, Some(effect), answer)
                        }
                        None => (text, None, false),
                    };
                    let invocation = decode_invocation(invocation, events)
                        .map_err(|why| format!("choice '{item}': {why}"))?;
                    Ok(Step {
                        invocation,
                        effect,
                        answer,
                    })
                };
                choices.push(Choice {
                    instead: if instead == "*" {
                        None
                    } else {
                        Some(step(instead).map_err(bad)?)
                    },
                    take: step(take).map_err(bad)?,
                });
            }
        }
        Ok(Schedule {
            base_seed,
            events: kept,
            faults,
            redeliveries_max,
            choices,
            split_answers,
        })
    }
}

fn decode_fault(item: &str, events: &[String]) -> std::result::Result<Fault, String> {
    let mut chars = item.chars();
    let kind = match chars.next() {
        Some('A') => FaultKind::CrashAfter,
        Some('B') => FaultKind::CrashBefore,
        Some('T') => FaultKind::Transient,
        Some('L') => FaultKind::LostResponse,
        _ => return Err(format!("fault '{item}' must start with A, B, T or L")),
    };
    let (invocation_text, effect_text) = chars
        .as_str()
        .rsplit_once('@')
        .ok_or_else(|| format!("fault '{item}' has no '@<effect>'"))?;
    let effect = parse_number(effect_text)
        .ok_or_else(|| format!("fault '{item}' has effect '{effect_text}', not a number"))?;
    let invocation = decode_invocation(invocation_text, events)
        .map_err(|why| format!("fault '{item}' {why}"))?;
    let id = parse_invocation(&invocation, events).map_err(|e| format!("fault '{item}': {e}"))?;
    Ok(Fault {
        kind,
        event: id.map(|id| id.event),
        invocation,
        effect,
        label: String::new(),
    })
}

/// An invocation id as run seeds write it: `2.1/0` for a driver event's, `~<percent-encoded>`
/// for any other.
fn encode_invocation(invocation: &str, events: &[String]) -> String {
    let id = parse_invocation(invocation, events);
    debug_assert!(id.is_ok(), "recorded invocation ids parse");
    match id {
        Ok(Some(id)) => format!("{}.{}{}", id.event + 1, id.delivery, id.nested),
        Ok(None) | Err(_) => format!("~{}", percent_encode(invocation)),
    }
}

/// Reverses `encode_invocation`; the error completes a sentence about the item.
fn decode_invocation(text: &str, events: &[String]) -> std::result::Result<String, String> {
    let invocation = match text.strip_prefix('~') {
        Some(encoded) => {
            let invocation =
                percent_decode(encoded).ok_or("has a badly encoded invocation".to_string())?;
            match parse_invocation(&invocation, events) {
                Ok(None) => invocation,
                // An event's invocation has one spelling, the compact one.
                Ok(Some(_)) => return Err("spells an event's invocation with '~'".into()),
                Err(e) => return Err(format!("has {e}")),
            }
        }
        None => {
            let (head, nested) = match text.find('/') {
                Some(at) => text.split_at(at),
                None => (text, ""),
            };
            let (event_text, delivery_text) = head
                .split_once('.')
                .ok_or("needs <event>.<delivery> or ~<id>".to_string())?;
            let event_number = parse_number(event_text)
                .filter(|n| *n >= 1 && *n as usize <= events.len())
                .ok_or_else(|| format!("names event '{event_text}' which does not exist"))?;
            let name = &events[event_number as usize - 1];
            format!("{name}#{delivery_text}{nested}")
        }
    };
    Ok(invocation)
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events() -> Vec<String> {
        vec!["req-1".into(), "req-2".into(), "req-3".into()]
    }

    fn fault(kind: FaultKind, invocation: &str, event: u32, effect: u32) -> Fault {
        Fault {
            kind,
            invocation: invocation.into(),
            event: Some(event),
            effect,
            label: String::new(),
        }
    }

    #[test]
    fn encodes_the_documented_example() {
        let schedule = Schedule {
            base_seed: 0x9f3c_2a1b_7d4e_5f60,
            events: vec![1],
            faults: vec![fault(FaultKind::CrashAfter, "req-2#1", 1, 0)],
            redeliveries_max: 3,
            choices: vec![],
            split_answers: false,
        };
        assert_eq!(schedule.encode(&events()), "9f3c2a1b7d4e5f60:2:A2.1@0:3");
        assert_eq!(
            Schedule::decode("9f3c2a1b7d4e5f60:2:A2.1@0:3", &events()).unwrap(),
            schedule
        );
    }

    #[test]
    fn round_trips() {
        let schedules = [
            Schedule {
                base_seed: 0,
                events: vec![],
                faults: vec![],
                redeliveries_max: 0,
                choices: vec![],
                split_answers: false,
            },
            Schedule {
                base_seed: u64::MAX,
                events: vec![0, 2],
                faults: vec![
                    fault(FaultKind::CrashBefore, "req-3#2/0/1", 2, 4),
                    fault(FaultKind::CrashAfter, "req-1#1", 0, 0),
                ],
                redeliveries_max: 12,
                choices: vec![],
                split_answers: false,
            },
            Schedule {
                base_seed: 7,
                events: vec![0, 1],
                faults: vec![fault(FaultKind::CrashAfter, "req-1#1", 0, 1)],
                redeliveries_max: 1,
                choices: vec![
                    Choice {
                        instead: Some(Step {
                            invocation: "req-1#1".into(),
                            effect: Some(1),
                            answer: false,
                        }),
                        take: Step {
                            invocation: "req-2#1".into(),
                            effect: None,
                            answer: false,
                        },
                    },
                    Choice {
                        instead: None,
                        take: Step {
                            invocation: "req-2#1".into(),
                            effect: Some(2),
                            answer: false,
                        },
                    },
                    Choice {
                        instead: Some(Step {
                            invocation: "batch-1#1".into(),
                            effect: Some(0),
                            answer: false,
                        }),
                        take: Step {
                            invocation: "req-1#1/0".into(),
                            effect: Some(3),
                            answer: false,
                        },
                    },
                ],
                split_answers: false,
            },
        ];
        for schedule in schedules {
            let text = schedule.encode(&events());
            let decoded = Schedule::decode(&text, &events()).unwrap();
            assert_eq!(decoded, schedule, "{text}");
            assert_eq!(decoded.encode(&events()), text);
        }
    }

    #[test]
    fn rejects_malformed_seeds_with_the_reason() {
        let cases = [
            ("", "expected 4 or 5 fields"),
            ("9f3c:2:-:0", "not 16 hex digits"),
            ("9f3c2a1b7d4e5f6g:2:-:0", "not 16 hex digits"),
            ("9f3c2a1b7d4e5f60:4:-:0", "event 4 does not exist"),
            ("9f3c2a1b7d4e5f60:0:-:0", "event 0 does not exist"),
            ("9f3c2a1b7d4e5f60:2,1:-:0", "ascending"),
            ("9f3c2a1b7d4e5f60:x:-:0", "not a number"),
            (
                "9f3c2a1b7d4e5f60:2:C2.1@0:0",
                "must start with A, B, T or L",
            ),
            ("9f3c2a1b7d4e5f60:2:T~batch%3a1#1@0:0", "badly encoded"),
            ("9f3c2a1b7d4e5f60:2:T~batch%2D1#1@0:0", "badly encoded"),
            ("9f3c2a1b7d4e5f60:2:T~batch:1@0:0", "no '@<effect>'"),
            ("9f3c2a1b7d4e5f60:2:-:0:1:2", "found 6"),
            ("9f3c2a1b7d4e5f60:2:-:0:", "choice '' is not"),
            ("9f3c2a1b7d4e5f60:2:-:0:-", "choice '-' is not"),
            ("9f3c2a1b7d4e5f60:2:-:0:2.1@0=4.1", "names event '4'"),
            ("9f3c2a1b7d4e5f60:2:-:0:2.1@x=1.1", "effect 'x'"),
            ("9f3c2a1b7d4e5f60:2:-:0:2.1@0=~req-1#1", "spells an event's"),
            (
                "9f3c2a1b7d4e5f60:2:T~req-2#1@0:0",
                "spells an event's invocation with '~'",
            ),
            ("9f3c2a1b7d4e5f60:2:T~@0:0", "is empty"),
            ("9f3c2a1b7d4e5f60:2:A2.1:0", "no '@<effect>'"),
            ("9f3c2a1b7d4e5f60:2:A1.1@0:0", "does not deliver"),
            ("9f3c2a1b7d4e5f60:2:A2.0@0:0", "deliveries count from 1"),
            ("9f3c2a1b7d4e5f60:2:A2.1@0,B2.1@0:0", "appears twice"),
            ("9f3c2a1b7d4e5f60:2:-:many", "redeliveries 'many'"),
            ("9f3c2a1b7d4e5f60:2:-:0:1", "choice '1' is not"),
        ];
        for (text, why) in cases {
            let error = Schedule::decode(text, &events()).unwrap_err();
            let message = error.message();
            assert!(
                message.starts_with(&format!("run seed '{text}' is malformed: ")),
                "{message}"
            );
            assert!(message.contains(why), "{text}: {message}");
        }
    }

    #[test]
    fn writes_choices_as_named_steps() {
        let text = "0000000000000007:1,2:-:0:1.1@1=2.1,*=2.1@0";
        let schedule = Schedule::decode(text, &events()).unwrap();
        assert_eq!(
            schedule.choices[0],
            Choice {
                instead: Some(Step {
                    invocation: "req-1#1".into(),
                    effect: Some(1),
                    answer: false
                }),
                take: Step {
                    invocation: "req-2#1".into(),
                    effect: None,
                    answer: false
                },
            }
        );
        assert_eq!(schedule.choices[1].instead, None);
        assert_eq!(schedule.encode(&events()), text);
    }

    #[test]
    fn writes_an_answer_step_with_a_plus() {
        // Instead of the answer of req-1#1's effect #0 reaching it, deliver req-2#1.
        let text = "0000000000000007:1,2:-:0:1.1@0+=2.1";
        let schedule = Schedule::decode(text, &events()).unwrap();
        assert_eq!(
            schedule.choices[0].instead,
            Some(Step {
                invocation: "req-1#1".into(),
                effect: Some(0),
                answer: true
            })
        );
        assert_eq!(schedule.encode(&events()), text);
        let error = Schedule::decode("0000000000000007:1,2:-:0:1.1@+=2.1", &events()).unwrap_err();
        assert!(error.message().contains("effect ''"), "{}", error.message());
    }

    #[test]
    fn marks_split_answers_at_the_head_of_the_choices() {
        for (text, choices) in [
            ("0000000000000007:1,2:-:0:+1.1@0+=2.1", 1),
            ("0000000000000007:1,2:-:0:+", 0),
        ] {
            let schedule = Schedule::decode(text, &events()).unwrap();
            assert!(schedule.split_answers, "{text}");
            assert_eq!(schedule.choices.len(), choices, "{text}");
            assert_eq!(schedule.encode(&events()), text);
        }
        let plain = Schedule::decode("0000000000000007:1,2:-:0:1.1@0+=2.1", &events()).unwrap();
        assert!(!plain.split_answers);
    }

    #[test]
    fn round_trips_transient_faults_and_platform_invocations() {
        let platform = |kind, invocation: &str, effect| Fault {
            kind,
            invocation: invocation.into(),
            event: None,
            effect,
            label: String::new(),
        };
        let schedule = Schedule {
            base_seed: 0x42,
            events: vec![1],
            faults: vec![
                fault(FaultKind::Transient, "req-2#1/0", 1, 3),
                platform(FaultKind::Transient, "batch-1#1", 0),
                platform(FaultKind::CrashAfter, "batch-1#1/0", 2),
                platform(FaultKind::CrashBefore, "alarm:DO@x,y~z%ü 1#2", 1),
                fault(FaultKind::LostResponse, "req-2#2", 1, 0),
            ],
            redeliveries_max: 2,
            choices: vec![],
            split_answers: false,
        };
        let text = schedule.encode(&events());
        assert_eq!(
            text,
            "0000000000000042:2:T2.1/0@3,T~batch-1#1@0,A~batch-1#1/0@2,\
             B~alarm%3ADO%40x%2Cy%7Ez%25%C3%BC%201#2@1,L2.2@0:2"
        );
        assert_eq!(Schedule::decode(&text, &events()).unwrap(), schedule);
    }

    #[test]
    fn parses_invocation_ids() {
        let id = parse_invocation("req-2#3/0/1", &events()).unwrap().unwrap();
        assert_eq!((id.event, id.delivery, id.nested), (1, 3, "/0/1"));
        // Ids that do not start with a driver event are the platform's.
        assert_eq!(parse_invocation("req-9#1", &events()).unwrap(), None);
        assert_eq!(parse_invocation("batch-1#1/0", &events()).unwrap(), None);
        assert!(parse_invocation("", &events()).is_err());
        assert!(parse_invocation("req-1", &events()).is_err());
        assert!(parse_invocation("req-1#01", &events()).is_err());
        assert!(parse_invocation("req-1#1/", &events()).is_err());
    }
}
