/**
 * When a cron trigger fires, as Cloudflare reads its expression ("Cron Triggers", "Supported cron
 * expressions"): five fields, minute hour day-of-month month weekday, in UTC, with Quartz-like
 * extensions. Weekdays count from 1 = Sunday to 7 = Saturday (`0 17 * * sun` is `0 17 * * 1`);
 * months and weekdays may be three-letter names in any case. Each field takes `*`, lists, ranges
 * and steps; the day of the month also `L` (its last day), `LW` (its last weekday) and `15W` (the
 * weekday nearest the 15th, within the month); the weekday also `6L` or `friL` (the month's
 * last Friday) and `6#2` (its second Friday). When both day fields are restricted, a day that
 * either one accepts fires, as in Unix cron.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** How far ahead a schedule is searched: years enough for a 29th of February on a Monday. */
const SEARCH_DAYS = 366 * 30;

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

export class CronError extends Error {}

export interface CronSchedule {
  /** The first time it fires at `ms` or after, in milliseconds since the epoch. */
  atOrAfter(ms: number): number;
}

/** One UTC day, as the day fields look at it. */
interface Day {
  readonly date: number;
  /** 1 = Sunday … 7 = Saturday. */
  readonly weekday: number;
  readonly daysInMonth: number;
}

type DayTest = (day: Day) => boolean;

export function parseCron(expression: string): CronSchedule {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new CronError(`"${expression}" has ${fields.length} fields; a cron expression has five`);
  }
  const [minuteField, hourField, domField, monthField, dowField] = fields as [
    string,
    string,
    string,
    string,
    string,
  ];
  const minutes = values(minuteField, "minute", 0, 59);
  const hours = values(hourField, "hour", 0, 23);
  const months = values(monthField, "month", 1, 12, MONTHS, 1);
  const dom = dayOfMonth(domField);
  const dow = weekday(dowField);
  const days: DayTest = domField === "*" ? dow : dowField === "*" ? dom : (day) => dom(day) || dow(day);
  const minuteList = [...minutes].sort((a, b) => a - b);
  const hourList = [...hours].sort((a, b) => a - b);
  return {
    atOrAfter(ms) {
      const from = Math.ceil(ms / MINUTE_MS) * MINUTE_MS;
      const firstDay = Math.floor(from / DAY_MS) * DAY_MS;
      for (let d = 0; d < SEARCH_DAYS; d++) {
        const start = firstDay + d * DAY_MS;
        const at = new Date(start);
        if (!months.has(at.getUTCMonth() + 1)) continue;
        const day: Day = {
          date: at.getUTCDate(),
          weekday: at.getUTCDay() + 1,
          daysInMonth: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 0)).getUTCDate(),
        };
        if (!days(day)) continue;
        for (const hour of hourList) {
          for (const minute of minuteList) {
            const time = start + hour * 3_600_000 + minute * MINUTE_MS;
            if (time >= from) return time;
          }
        }
      }
      throw new CronError(`"${expression}" never fires`);
    },
  };
}

/** The values a field lists: `*`, `a`, `a-b`, each with an optional `/step`, comma-separated. */
function values(
  field: string,
  name: string,
  min: number,
  max: number,
  names: readonly string[] = [],
  firstName = min,
): Set<number> {
  const out = new Set<number>();
  for (const item of field.split(",")) {
    const [range, stepText, extra] = item.split("/");
    if (range === undefined || extra !== undefined) throw bad(field, name);
    const step = stepText === undefined ? 1 : number(stepText, field, name);
    if (step < 1) throw bad(field, name);
    let from: number;
    let to: number;
    if (range === "*") {
      [from, to] = [min, max];
    } else {
      const [a, b, more] = range.split("-");
      if (a === undefined || more !== undefined) throw bad(field, name);
      from = value(a, field, name, names, firstName);
      // `a/step` runs from a to the end of the field, as in Quartz.
      to = b !== undefined ? value(b, field, name, names, firstName) : stepText !== undefined ? max : from;
    }
    if (from < min || to > max || from > to) {
      throw new CronError(`${name} "${field}" is out of its range ${min}-${max}`);
    }
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

function value(text: string, field: string, name: string, names: readonly string[], first: number): number {
  const at = names.indexOf(text.toLowerCase());
  return at >= 0 ? at + first : number(text, field, name);
}

function number(text: string, field: string, name: string): number {
  if (!/^\d+$/.test(text)) throw bad(field, name);
  return Number(text);
}

function bad(field: string, name: string): CronError {
  return new CronError(`${name} "${field}" is not a cron field Cloudflare accepts`);
}

/** The day-of-month field: values, or `L`, `LW`, `<n>W`. */
function dayOfMonth(field: string): DayTest {
  if (field === "*") return () => true;
  const tests: DayTest[] = field.split(",").map((item) => {
    const upper = item.toUpperCase();
    if (upper === "L") return (day) => day.date === day.daysInMonth;
    if (upper === "LW") return (day) => day.date === lastWeekday(day);
    const nearest = /^(\d+)W$/.exec(upper);
    if (nearest) {
      const target = number(nearest[1] as string, field, "day of month");
      if (target < 1 || target > 31) throw new CronError(`day of month "${field}" is out of its range 1-31`);
      return (day) => day.date === nearestWeekday(day, target);
    }
    const listed = values(item, "day of month", 1, 31);
    return (day) => listed.has(day.date);
  });
  return (day) => tests.some((test) => test(day));
}

/** The weekday field: values (1 = Sunday), or `<d>L` (the month's last), `<d>#<k>` (its k-th). */
function weekday(field: string): DayTest {
  if (field === "*") return () => true;
  const tests: DayTest[] = field.split(",").map((item) => {
    const last = /^(\w+)L$/i.exec(item);
    if (last) {
      const d = value(last[1] as string, field, "weekday", WEEKDAYS, 1);
      if (d < 1 || d > 7) throw new CronError(`weekday "${field}" is out of its range 1-7`);
      return (day) => day.weekday === d && day.date + 7 > day.daysInMonth;
    }
    const nth = /^(\w+)#(\d)$/.exec(item);
    if (nth) {
      const d = value(nth[1] as string, field, "weekday", WEEKDAYS, 1);
      const k = Number(nth[2]);
      if (d < 1 || d > 7 || k < 1 || k > 5) throw new CronError(`weekday "${field}" is out of its range`);
      return (day) => day.weekday === d && Math.ceil(day.date / 7) === k;
    }
    const listed = values(item, "weekday", 1, 7, WEEKDAYS, 1);
    return (day) => listed.has(day.weekday);
  });
  return (day) => tests.some((test) => test(day));
}

/** The date of the month's last Monday-to-Friday. */
function lastWeekday(day: Day): number {
  const lastWeekdayOf = weekdayOf(day, day.daysInMonth);
  if (lastWeekdayOf === 7) return day.daysInMonth - 1;
  if (lastWeekdayOf === 1) return day.daysInMonth - 2;
  return day.daysInMonth;
}

/** The weekday nearest the `target`th, without leaving the month (Quartz's `W`). */
function nearestWeekday(day: Day, target: number): number {
  const date = Math.min(target, day.daysInMonth);
  const w = weekdayOf(day, date);
  if (w === 7) return date === 1 ? 3 : date - 1;
  if (w === 1) return date === day.daysInMonth ? date - 2 : date + 1;
  return date;
}

/** The weekday (1 = Sunday) of `date` in `day`'s month. */
function weekdayOf(day: Day, date: number): number {
  return ((((day.weekday - 1 + date - day.date) % 7) + 7) % 7) + 1;
}
