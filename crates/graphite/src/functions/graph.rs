//! graphite-web's Graph group: how a series is drawn. JSON has no drawing, so most pass
//! their series through; those that rename or tag them (as graphite-web does) do so.

use super::*;

/// `alpha`, `color`, `lineWidth`: the series unchanged.
pub(super) fn pass(c: &mut Call<'_, '_>) -> Result<Value, String> {
    c.series("seriesList").map(Value::List)
}

/// `drawAsInfinite`, `secondYAxis`: tagged and named after the function.
pub(super) fn mark(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let f = c.name;
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.set_tag(f, "1");
        s.name = format!("{f}({})", s.name);
    }
    Ok(Value::List(l))
}

pub(super) fn dashed(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.get("dashLength").clone();
    let g = g_of(&v);
    let mut l = c.series("seriesList")?;
    for s in &mut l {
        s.set_tag("dashed", v.py_str());
        s.name = format!("dashed({}, {g})", s.name);
    }
    Ok(Value::List(l))
}

pub(super) fn area_between(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let mut l = c.series("seriesList")?;
    if l.len() != 2 {
        return Err("areaBetween series argument must reference *exactly* 2 series".into());
    }
    l[1].set_tag("areaBetween", "1");
    let name = format!("areaBetween({})", l[1].path_expression);
    let tags = l[1].tags.clone();
    for s in &mut l {
        s.tags = tags.clone();
        s.name = name.clone();
    }
    Ok(Value::List(l))
}

pub(super) fn stacked(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let stack = c.get("stackName").py_str();
    let l = c.series("seriesLists")?;
    let stacks = c.ctx.state.stacks.clone();
    let mut stacks = stacks.borrow_mut();
    let total = stacks.entry(stack.clone()).or_default();
    let mut out = Vec::with_capacity(l.len());
    for mut s in l {
        let mut values = Vec::with_capacity(s.values.len());
        for (i, v) in s.values.iter().enumerate() {
            if total.len() <= i {
                total.push(0.0);
            }
            match v {
                Some(x) => {
                    total[i] += x;
                    values.push(Some(total[i]));
                }
                None => values.push(None),
            }
        }
        let name = if stack == "__DEFAULT__" {
            s.set_tag("stacked", stack.clone());
            format!("stacked({})", s.name)
        } else {
            s.name.clone()
        };
        out.push(s.copy(name, s.start, s.end, s.step, values));
    }
    Ok(Value::List(out))
}

pub(super) fn threshold(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let v = c.take("value");
    let label = c.get("label").clone();
    let mut s = special::constant(c.ctx, v)?;
    if label.truthy() {
        s.name = label.py_str();
    }
    Ok(Value::List(vec![s]))
}

pub(super) fn vertical_line(c: &mut Call<'_, '_>) -> Result<Value, String> {
    let ts = transform::date_of(c, "ts")?;
    let (from, until) = (c.ctx.from, c.ctx.until);
    if ts < from {
        return Err(format!(
            "verticalLine(): timestamp {ts} exists before start of range"
        ));
    }
    if ts > until {
        return Err(format!(
            "verticalLine(): timestamp {ts} exists after end of range"
        ));
    }
    let label = c.get("label").clone();
    let mut s = Series::new(label.py_str(), ts, ts, 1, vec![Some(1.0), Some(1.0)]);
    s.xff = xff_of(c.ctx, None);
    s.name_none = label == Value::None;
    Ok(Value::List(vec![s]))
}
