/* The "Arduino sketch printing text" of the identify fleet (tests/pty/fleet.py): a sketch-shaped program
 * (setup() once, loop() for ever) for the ATmega328P of an Arduino Uno at 16 MHz, written against avr-libc, not
 * the Arduino core library: Serial.begin(9600) and Serial.println() are the few lines below (println ends a line
 * with "\r\n", as the core's Print does). Once a second it prints a reading, the way a sensor sketch does; between
 * readings the core sleeps (Timer1 wakes it), so simavr runs at the board's real pace.
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>
#include <stdio.h>

#define F_CPU_HZ 16000000UL
#define BAUD 9600UL

static volatile unsigned long ticks; /* seconds since reset, from Timer1 */

ISR(TIMER1_COMPA_vect) { ticks++; }

static void serial_begin(void)
{
    UBRR0 = (unsigned)(F_CPU_HZ / 16 / BAUD - 1);
    UCSR0B = (1 << TXEN0) | (1 << RXEN0);
    UCSR0C = (1 << UCSZ01) | (1 << UCSZ00); /* 8N1 */
}

static void serial_print(const char *s)
{
    for (; *s; s++) {
        while (!(UCSR0A & (1 << UDRE0))) {
        }
        UDR0 = (unsigned char)*s;
    }
}

static void serial_println(const char *s)
{
    serial_print(s);
    serial_print("\r\n");
}

static void setup(void)
{
    serial_begin();
    serial_println("Sensor node ready");
    TCCR1B = (1 << WGM12) | (1 << CS12) | (1 << CS10); /* CTC, clk/1024 */
    OCR1A = (unsigned)(F_CPU_HZ / 1024 - 1);          /* one second */
    TIMSK1 = 1 << OCIE1A;
    sei();
}

static void loop(void)
{
    static unsigned long shown;
    char text[64];
    while (ticks == shown) {
        sleep_mode(); /* idle: Timer1 wakes it */
    }
    shown = ticks;
    unsigned raw = 500u + (unsigned)((shown * 37u) % 50u);
    snprintf(text, sizeof text, "t=%lus temperature=%u.%uC light=%u", shown, 20u + raw % 7u, raw % 10u, raw);
    serial_println(text);
}

int main(void)
{
    setup();
    for (;;) {
        loop();
    }
}
