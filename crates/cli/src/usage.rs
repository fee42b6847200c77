//! The usage text of each command, as rrdtool 1.7.2 prints it between its banner and its
//! licence footer (`rrdtool <command>` with no arguments). ringlet prints its own banner.

/// Commands ringlet implements, with their usage body.
pub const USAGE: &[(&str, &str)] = &[
    ("create", "* create - create a new RRD\n\n\trrdtool create filename [--start|-b start time]\n\t\t[--step|-s step]\n\t\t[--template|-t template-file]\n\t\t[--source|-r source-file]\n\t\t[--no-overwrite|-O]\n\t\t[--daemon|-d address]\n\t\t[DS:ds-name:DST:dst arguments]\n\t\t[RRA:CF:cf arguments]\n\n"),
    ("update", "* update - update an RRD\n\n\trrdtool update filename\n\t\t[--template|-t ds-name:ds-name:...]\n\t\t[--skip-past-updates|-s]\n\t\t[--daemon|-d <address>]\n\t\ttime|N:value[:value...]\n\n\t\tat-time@value[:value...]\n\n\t\t[ time:value[:value...] ..]\n\n"),
    ("updatev", "* updatev - a verbose version of update\n\treturns information about values, RRAs, and datasources updated\n\n\trrdtool updatev filename\n\t\t[--template|-t ds-name:ds-name:...]\n\t\t[--skip-past-updates|-s]\n\t\ttime|N:value[:value...]\n\n\t\tat-time@value[:value...]\n\n\t\t[ time:value[:value...] ..]\n\n"),
    ("fetch", "* fetch - fetch data out of an RRD\n\n\trrdtool fetch filename.rrd CF\n\t\t[-r|--resolution resolution]\n\t\t[-s|--start start] [-e|--end end]\n\t\t[-a|--align-start]\n\t\t[-d|--daemon <address>]\n\n"),
    ("info", "* info - returns the configuration and status of the RRD\n\n\trrdtool info [--daemon|-d <addr> [--noflush|-F]] filename.rrd\n\n"),
    ("first", "* first - show first update time for RRA within an RRD\n\n\trrdtool first filename.rrd [--rraindex number] [--daemon|-d address]\n\n"),
    ("last", "* last - show last update time for RRD\n\n\trrdtool last filename.rrd\n\t\t[--daemon|-d address]\n\n"),
    ("lastupdate", "* lastupdate - returns the most recent datum stored for\n  each DS in an RRD\n\n\trrdtool lastupdate filename.rrd\n\t\t[--daemon|-d address]\n\n"),
    ("dump", "* dump - dump an RRD to XML\n\n\trrdtool dump [--header|-h {none,xsd,dtd}]\n\t\t[--no-header|-n]\n\t\t[--daemon|-d address]\n\t\tfile.rrd [file.xml]\n"),
    ("restore", "* restore - restore an RRD file from its XML form\n\n\trrdtool restore [--range-check|-r] [--force-overwrite|-f] filename.xml filename.rrd\n\n"),
    ("xport", "* xport - generate XML dump from one or several RRD\n\n\trrdtool xport [-s|--start seconds] [-e|--end seconds]\n\t\t[-m|--maxrows rows]\n\t\t[--step seconds]\n\t\t[--enumds] [--json]\n\t\t[-d|--daemon address]\n\t\t[DEF:vname=rrd:ds-name:CF]\n\t\t[CDEF:vname=rpn-expression]\n\t\t[XPORT:vname:legend]\n\n"),
    ("tune", "* tune -  Modify some basic properties of an RRD\n\n\trrdtool tune filename\n\t\t[--heartbeat|-h ds-name:heartbeat]\n\t\t[--data-source-type|-d ds-name:DST]\n\t\t[--data-source-rename|-r old-name:new-name]\n\t\t[--minimum|-i ds-name:min] [--maximum|-a ds-name:max]\n\t\t[--deltapos|-p scale-value] [--deltaneg|-n scale-value]\n\t\t[--failure-threshold|-f integer]\n\t\t[--window-length|-w integer]\n\t\t[--alpha|-x adaptation-parameter]\n\n\t\t[--beta|-y adaptation-parameter]\n\t\t[--gamma|-z adaptation-parameter]\n\t\t[--gamma-deviation|-v adaptation-parameter]\n\t\t[--smoothing-window|-s fraction-of-season]\n\t\t[--smoothing-window-deviation|-S fraction-of-season]\n\t\t[--aberrant-reset|-b ds-name]\n\n\t\t[--step|-t newstep]\n\t\t[--daemon|-D address]\n\t\t[DEL:ds-name]\n\t\t[DS:ds-spec]\n\t\t[DELRRA:index]\n\t\t[RRA:rra-spec]\n\t\t[RRA#index:[+-=]number]\n\n"),
    ("resize", "* resize - alter the length of one of the RRAs in an RRD\n\n\trrdtool resize filename rranum GROW|SHRINK rows\n\n"),
];

/// The usage body of `cmd`, if ringlet implements it.
pub fn usage_of(cmd: &str) -> Option<&'static str> {
    USAGE.iter().find(|(c, _)| *c == cmd).map(|(_, u)| *u)
}
