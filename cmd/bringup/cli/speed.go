package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// MaxSpeed is the fastest a clock may be told to run, in host seconds per
// real second: the replay's own bound (record.MaxSpeed, the most `>`
// doubles to). Past it a simulated or replayed clock's arithmetic stops
// meaning anything (1e308 overflows the clock into the year 1734).
const MaxSpeed = 10000

// CheckSpeed accepts a clock speed: a finite number greater than 0 and at
// most MaxSpeed.
func CheckSpeed(speed float64) error {
	switch {
	case math.IsNaN(speed) || math.IsInf(speed, 0):
		return errors.New("not a finite number")
	case speed <= 0:
		return errors.New("must be greater than 0")
	case speed > MaxSpeed:
		return fmt.Errorf("at most %d", MaxSpeed)
	}
	return nil
}

// speedValue is a --speed flag: a float64 checked by CheckSpeed as it is
// parsed, so that a bad speed is a usage error naming the flag
// ("--speed NaN: not a finite number").
type speedValue float64

func (s *speedValue) Set(text string) error {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return checkError{errors.New("not a number")}
	}
	if err := CheckSpeed(v); err != nil {
		return checkError{err}
	}
	*s = speedValue(v)
	return nil
}

func (s *speedValue) String() string { return strconv.FormatFloat(float64(*s), 'g', -1, 64) }

func (s *speedValue) Type() string { return "float64" }

// SpeedVar defines a clock speed flag, stored in p, checked by CheckSpeed
// when given; value, the default, is taken as it is (0 may mean "as
// recorded").
func (f *Flags) SpeedVar(p *float64, name string, value float64, usage string) {
	*p = value
	f.Var((*speedValue)(p), name, usage)
}

// Speed is SpeedVar returning where the value is kept.
func (f *Flags) Speed(name string, value float64, usage string) *float64 {
	p := new(float64)
	f.SpeedVar(p, name, value, usage)
	return p
}

// checkError is a flag value refused by its check: ParseArgs says it as
// "--FLAG VALUE: why", where pflag's own words are about syntax
// ("invalid argument … for … flag: strconv.ParseFloat: …").
type checkError struct{ error }

func (e checkError) Unwrap() error { return e.error }
