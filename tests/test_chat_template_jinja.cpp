// The Jinja interpreter, feature by feature; expectations are what Python jinja2 3.1 prints with
// transformers' settings (trim_blocks, lstrip_blocks, its tojson).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "error_of.h"
#include "text/jinja_template.h"

using grt::testing::error_of;
using grt::jinja::Template;
using grt::jinja::Value;

namespace {

std::string render(const std::string& src, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object()) {
  Template t(src, "t.jinja");
  Value v = Value::from_json(vars);
  return t.render(v.dict());
}

std::string render_error(const std::string& src, const nlohmann::ordered_json& vars = nlohmann::ordered_json::object()) {
  return error_of([&] { render(src, vars); });
}

}  // namespace

TEST(Jinja, TextAndOutput) {
  EXPECT_EQ(render("a {{ x }} b", {{"x", 1}}), "a 1 b");
  EXPECT_EQ(render("{{ 'q' }}{{ \"d\" }}"), "qd");
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ False }}|{{ 1.5 }}|{{ 2.0 }}|{{ 1e20 }}"), "None|True|False|1.5|2.0|1e+20");
  EXPECT_EQ(render("{{ [1, 'a', none, true] }}"), "[1, 'a', None, True]");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [2]} }}"), "{'a': 1, 'b': [2]}");
  EXPECT_EQ(render("{{ \"it's\" }}|{{ [\"it's\"] }}"), "it's|[\"it's\"]");
}

TEST(Jinja, Comments) { EXPECT_EQ(render("a{# hidden {{ x }} #}b"), "ab"); }

TEST(Jinja, WhitespaceControlDash) {
  EXPECT_EQ(render("a  \n {{- 'x' -}} \n  b"), "axb");
  EXPECT_EQ(render("a \n{%- if true -%}\n x \n{%- endif -%}\n b"), "axb");
}

TEST(Jinja, TrimBlocksDropsNewlineAfterBlockTag) {
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nend"), "yes\nend");
  EXPECT_EQ(render("{# c #}\nx"), "x");
  // not after {{ }}
  EXPECT_EQ(render("{{ 1 }}\nx"), "1\nx");
}

TEST(Jinja, LstripBlocksDropsIndentBeforeBlockTag) {
  EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\n"), "    x\n");
  // only at a line start
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");
  // {%+ keeps it
  EXPECT_EQ(render("  {%+ if true %}b{% endif %}"), "  b");
  // not for {{
  EXPECT_EQ(render("  {{ 'v' }}"), "  v");
}

TEST(Jinja, IfElifElse) {
  const std::string t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(t, {{"x", 1}}), "one");
  EXPECT_EQ(render(t, {{"x", 2}}), "two");
  EXPECT_EQ(render(t, {{"x", 3}}), "many");
}

TEST(Jinja, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}",
                   {{"xs", {"a", "b"}}}),
            "10TrueFalse221;21FalseTrue210;");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }},{% endfor %}", {{"xs", {1, 2, 3}}}),
            ">1>2,1>2>3,2>3>,");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.cycle('a', 'b') }}{% endfor %}", {{"xs", {1, 2, 3}}}), "aba");
}

TEST(Jinja, ForElseAndFilterAndUnpack) {
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}"), "2242");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"x", 1}, {"y", 2}}}}), "xy");
  EXPECT_EQ(render("{% for c in 'héllo' %}[{{ c }}]{% endfor %}"), "[h][é][l][l][o]");
  EXPECT_EQ(render("{% for x in undefined_thing %}x{% else %}none{% endfor %}"), "none");
}

TEST(Jinja, BreakAndContinue) {
  EXPECT_EQ(render("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "13");
}

TEST(Jinja, SetScopingAndNamespace) {
  // a set inside a loop does not leak out of it; a namespace carries values out
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1,2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1, y='a') %}{% for i in [5,6] %}{% set ns.x = ns.x + i %}{% endfor %}"
                   "{{ ns.x }}{{ ns.y }}"),
            "12a");
  EXPECT_EQ(render("{% if true %}{% set y = 3 %}{% endif %}{{ y }}"), "3");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set blk %}in {{ 1 + 1 }}{% endset %}[{{ blk }}]"), "[in 2]");
  EXPECT_NE(render_error("{% set x = 1 %}{% set x.a = 2 %}").find("not a namespace"), std::string::npos);
}

TEST(Jinja, Macros) {
  EXPECT_EQ(render("{% macro m(a, b='d') %}<{{ a }}{{ b }}>{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}"),
            "<1d><12><43>");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}body{% endcall %}"), "[body]");
  EXPECT_NE(render_error("{% macro m(a) %}{% endmacro %}{{ m(z=1) }}").find("no argument 'z'"), std::string::npos);
}

TEST(Jinja, GenerationBlockRendersBody) {
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(Jinja, FilterBlock) { EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC"); }

TEST(Jinja, TojsonMatchesTransformers) {
  nlohmann::ordered_json v = {{"z", 1}, {"a", {1.5, "é\"\n", nullptr, true}}};
  EXPECT_EQ(render("{{ v | tojson }}", {{"v", v}}), "{\"z\": 1, \"a\": [1.5, \"é\\\"\\n\", null, true]}");
  EXPECT_EQ(render("{{ v | tojson(indent=2) }}", {{"v", {{"a", {1}}, {"b", nlohmann::ordered_json::object()}}}}),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}");
  EXPECT_EQ(render("{{ v | tojson(sort_keys=true) }}", {{"v", v}}).substr(0, 6), "{\"a\": ");
  EXPECT_EQ(render("{{ '<&>' | tojson }}"), "\"<&>\"");  // no HTML escaping
  EXPECT_NE(render_error("{{ nothing | tojson }}").find("undefined"), std::string::npos);
}

TEST(Jinja, StringFilters) {
  EXPECT_EQ(render("{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}"), "a b|a");
  EXPECT_EQ(render("{{ 'aBc' | lower }}{{ 'aBc' | upper }}{{ 'hello wORLD-x' | title }}{{ 'hELLO' | capitalize }}"),
            "abcABCHello World-XHello");
  EXPECT_EQ(render("{{ 'a-b-c' | replace('-', '+') }}{{ 'aaa' | replace('a', 'b', 2) }}"), "a+b+cbba");
  EXPECT_EQ(render("{{ 12 | string }}{{ (1 | string) ~ 2 }}"), "1212");
  EXPECT_EQ(render("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(render("{{ '<a href=\"x\">&' | e }}"), "&lt;a href=&#34;x&#34;&gt;&amp;");
  EXPECT_EQ(render("{{ 'ab' | safe }}"), "ab");
}

TEST(Jinja, SequenceFilters) {
  EXPECT_EQ(render("{{ xs | length }}{{ 'héllo' | length }}{{ d | count }}{{ missing | length }}",
                   {{"xs", {1, 2, 3}}, {"d", {{"a", 1}}}}),
            "3510");
  EXPECT_EQ(render("{{ xs | join(', ') }}|{{ xs | first }}|{{ xs | last }}|{{ 'abc' | list }}", {{"xs", {1, 2, 3}}}),
            "1, 2, 3|1|3|['a', 'b', 'c']");
  EXPECT_EQ(render("{{ xs | map(attribute='n') | join }}", {{"xs", {{{"n", "a"}}, {{"n", "b"}}}}}), "ab");
  EXPECT_EQ(render("{{ ['1', '2'] | map('int') | sum }}"), "3");
  EXPECT_EQ(render("{{ [1,2,3,4] | select('odd') | list }}{{ [1,2,3,4] | reject('odd') | list }}"), "[1, 3][2, 4]");
  EXPECT_EQ(render("{{ xs | selectattr('t', 'equalto', 'a') | map(attribute='n') | join }}"
                   "{{ xs | rejectattr('t', 'equalto', 'a') | map(attribute='n') | join }}"
                   "{{ xs | selectattr('t') | list | length }}",
                   {{"xs", {{{"t", "a"}, {"n", 1}}, {{"t", "b"}, {"n", 2}}, {{"t", "a"}, {"n", 3}}}}}),
            "1323");
  EXPECT_EQ(render("{{ [3,1,2] | sort }}{{ [3,1,2] | sort(reverse=true) }}{{ ['b','A','c'] | sort }}"),
            "[1, 2, 3][3, 2, 1]['A', 'b', 'c']");
  EXPECT_EQ(render("{{ [1,2,1,'a','A'] | unique | list }}"), "[1, 2, 'a']");
  EXPECT_EQ(render("{% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %}|{% for k, v in d | items %}{{ k }}{{ v }}"
                   "{% endfor %}|{% for k, v in d | dictsort(by='value', reverse=true) %}{{ k }}{% endfor %}",
                   {{"d", {{"b", 1}, {"a", 2}}}}),
            "a2b1|b1a2|ab");
  EXPECT_EQ(render("{{ [1,2,3] | reverse | list }}{{ 'abc' | reverse }}"), "[3, 2, 1]cba");
}

TEST(Jinja, DefaultFilter) {
  EXPECT_EQ(render("{{ x | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}|{{ x | d(1) }}"),
            "d||d|1");
}

TEST(Jinja, NumberFilters) {
  EXPECT_EQ(render("{{ '42' | int }}{{ '4.7' | int }}{{ 'x' | int }}{{ 'x' | int(7) }}{{ 3.9 | int }}"), "424073");
  EXPECT_EQ(render("{{ '2.5' | float }}|{{ -3 | abs }}|{{ 2.5 | round }}|{{ 3.14159 | round(2) }}|{{ 2.1 | round(0, 'ceil') }}"),
            "2.5|3|2.0|3.14|3.0");
}

TEST(Jinja, Tests) {
  nlohmann::ordered_json v = {{"s", "x"}, {"i", 1}, {"f", 1.5}, {"b", true}, {"n", nullptr}, {"l", {1}}, {"d", {{"a", 1}}}};
  EXPECT_EQ(render("{{ s is string }}{{ i is string }}{{ i is number }}{{ f is number }}{{ i is integer }}"
                   "{{ f is float }}{{ b is boolean }}{{ b is true }}{{ b is false }}{{ n is none }}",
                   v),
            "TrueFalseTrueTrueTrueTrueTrueTrueFalseTrue");
  EXPECT_EQ(render("{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ s is iterable }}{{ l is sequence }}"
                   "{{ zz is defined }}{{ zz is undefined }}{{ s is defined }}{{ n is not none }}",
                   v),
            "TrueFalseTrueTrueTrueFalseTrueTrueFalse");
  EXPECT_EQ(render("{{ 3 is odd }}{{ 3 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 1 is eq 1 }}"
                   "{{ 'a' is equalto 'b' }}{{ 'a' is in 'cat' }}"),
            "TrueFalseTrueFalseTrueFalseTrue");
}

TEST(Jinja, StringMethods) {
  EXPECT_EQ(render("{{ 'hello'.startswith('he') }}{{ 'hello'.endswith('lo') }}{{ 'hello'.startswith(('x', 'h')) }}"),
            "TrueTrueTrue");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a,b,c'.rsplit(',', 1) }}{{ 'a,b,c'.split(',', 1) }}"),
            "['a', 'b', '', 'c']['a', 'b']['a,b', 'c']['a', 'b,c']");
  EXPECT_EQ(render("[{{ '\n x \n'.strip() }}][{{ '\nx\n'.lstrip('\n') }}][{{ 'x\n\n'.rstrip('\n') }}][{{ 'xxyxx'.strip('x') }}]"),
            "[x][x\n][x][y]");
  EXPECT_EQ(render("{{ 'aXa'.replace('a', 'b') }}{{ 'ab'.upper() }}{{ 'AB'.lower() }}{{ 'hi you'.title() }}"),
            "bXbABabHi You");
  EXPECT_EQ(render("{{ 'héllo'.find('l') }}{{ 'abc'.find('z') }}{{ 'banana'.count('an') }}"), "2-12");
  EXPECT_EQ(render("{{ '{} and {x}'.format(1, x=2) }}"), "1 and 2");
}

TEST(Jinja, DictMethodsAndAttributes) {
  nlohmann::ordered_json d = {{"d", {{"a", 1}, {"b", 2}}}};
  EXPECT_EQ(render("{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 5) }}",
                   d),
            "['a', 'b'][1, 2]1None5");
  EXPECT_EQ(render("{{ d.a }}{{ d['b'] }}[{{ d.zz }}]{{ d.zz is defined }}", d), "12[]False");
  // attribute of an undefined value is an error, as jinja2's default Undefined
  EXPECT_NE(render_error("{{ d.zz.yy }}", d).find("'d.zz' is undefined"), std::string::npos);
  // attribute of none is undefined, not an error
  EXPECT_EQ(render("{{ n.x is defined }}", {{"n", nullptr}}), "False");
  EXPECT_NE(render_error("{{ xs.append(1) }}", {{"xs", {1}}}).find("sandbox"), std::string::npos);
}

TEST(Jinja, IndexingAndSlicing) {
  nlohmann::ordered_json v = {{"xs", {0, 1, 2, 3, 4}}};
  EXPECT_EQ(render("{{ xs[0] }}{{ xs[-1] }}[{{ xs[9] }}]{{ xs[1:3] }}{{ xs[:2] }}{{ xs[3:] }}{{ xs[-2:] }}", v),
            "04[][1, 2][0, 1][3, 4][3, 4]");
  EXPECT_EQ(render("{{ xs[::-1] }}{{ xs[::2] }}{{ xs[4:1:-2] }}{{ xs[:-10] }}", v), "[4, 3, 2, 1, 0][0, 2, 4][4, 2][]");
  EXPECT_EQ(render("{{ 'héllo'[1] }}{{ 'héllo'[1:3] }}{{ 'abc'[::-1] }}"), "éélcba");
}

TEST(Jinja, Operators) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}{{ (1 + 2) * 3 }}{{ 7 // 2 }}{{ -7 // 2 }}{{ 7 % 3 }}{{ -7 % 3 }}{{ 2 ** 10 }}"),
            "793-4121024");
  EXPECT_EQ(render("{{ 7 / 2 }}{{ 4 / 2 }}{{ 1 + 0.5 }}{{ 'a' + 'b' }}{{ 'a' ~ 1 ~ none }}{{ [1] + [2] }}{{ 'ab' * 2 }}"),
            "3.52.01.5aba1None[1, 2]abab");
  EXPECT_EQ(render("{{ 1 < 2 }}{{ 'b' > 'a' }}{{ 2 <= 2 }}{{ 1 != 1 }}{{ 1 == 1.0 }}{{ 1 < 2 < 3 }}"),
            "TrueTrueTrueFalseTrueTrue");
  EXPECT_EQ(render("{{ 'a' in 'cat' }}{{ 2 in [1,2] }}{{ 'k' in {'k': 1} }}{{ 'z' not in 'cat' }}{{ 'a' in nothing }}"),
            "TrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ 0 or 'x' }}{{ 1 and 'y' }}{{ not 0 }}{{ not [] }}{{ none or false }}"), "xyTrueTrueFalse");
  EXPECT_EQ(render("{{ 'y' if 1 else 'n' }}{{ 'y' if 0 else 'n' }}[{{ 'y' if 0 }}]"), "yn[]");
  EXPECT_EQ(render("{{ xs | length - 1 }}{{ -1 | abs }}", {{"xs", {1, 2}}}), "11");
  EXPECT_NE(render_error("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(render_error("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(render_error("{{ nothing + 'a' }}").find("'nothing' is undefined"), std::string::npos);
}

TEST(Jinja, StringLiteralEscapes) {
  EXPECT_EQ(render(R"({{ 'a\nb\t\'\\' }}{{ "\"x\"" }}{{ '\u00e9\x41' }})"), "a\nb\t'\\\"x\"éA");
  EXPECT_EQ(render("{{ 'ab' 'cd' }}"), "abcd");
}

TEST(Jinja, BuiltinGlobals) {
  EXPECT_EQ(render("{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ dict(a=1) }}"), "[0, 1, 2][1, 3, 5]{'a': 1}");
}

TEST(Jinja, SyntaxErrorNamesLineAndColumn) {
  std::string e = error_of([] { Template("line1\n{% if x %}\n{{ 1 + }}\n{% endif %}", "bad.jinja"); });
  EXPECT_NE(e.find("bad.jinja line 3, column 8"), std::string::npos) << e;
  EXPECT_NE(e.find("syntax error"), std::string::npos) << e;
  e = error_of([] { Template("{% if x %}never closed", "bad.jinja"); });
  EXPECT_NE(e.find("'endif'"), std::string::npos) << e;
  e = error_of([] { Template("\n\n{{ x ", "bad.jinja"); });
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("never closed"), std::string::npos) << e;
  e = error_of([] { Template("{% frobnicate %}", "bad.jinja"); });
  EXPECT_NE(e.find("unexpected tag 'frobnicate'"), std::string::npos) << e;
}

TEST(Jinja, RenderErrorNamesLine) {
  std::string e = render_error("a\nb\n  {{ x.y.z }}", {{"x", nlohmann::ordered_json::object()}});
  EXPECT_NE(e.find("t.jinja line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("'x.y' is undefined"), std::string::npos) << e;
  e = render_error("\n{{ 'a' | nofilter }}");
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown filter 'nofilter'"), std::string::npos) << e;
}
